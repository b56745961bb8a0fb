package memory

import "sync/atomic"

// segment is SegmentSize consecutive slots of one partition.
type segment[T any] struct {
	// base is the offset of items[0], or -1 while the segment is on the free
	// list. The writer sets it before the segment is reachable through the
	// ring; Read checks it, so a reader that asks for a released offset gets
	// an error instead of another segment's items.
	base  atomic.Int64
	items []T
}

// ring finds a live segment by its number (offset / SegmentSize) at slot
// number & mask. The writer keeps every live segment in it, doubling it
// into a new ring before two live segments would share a slot; an old ring
// is never written again, so a reader holding one still finds every segment
// that was live when it loaded it.
type ring[T any] struct {
	mask  int64
	slots []atomic.Pointer[segment[T]]
}

// newRing returns a ring of at least n slots (a power of two).
func newRing[T any](n int64) *ring[T] {
	size := int64(1)
	for size < n {
		size <<= 1
	}
	return &ring[T]{mask: size - 1, slots: make([]atomic.Pointer[segment[T]], size)}
}

func (r *ring[T]) slot(num int64) *atomic.Pointer[segment[T]] { return &r.slots[num&r.mask] }
