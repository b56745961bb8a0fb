package memory

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/runnel-dev/runnel/isb"
)

// Log is one partition of a memory Backend; it implements [isb.Log].
//
// Offsets start at 0. Item o lives in segment o/SegmentSize at slot
// o%SegmentSize. Every method is safe for concurrent use. Log serializes its
// own appends (it declares isb.Caps.Concurrent, so the topic adds no lock
// of its own) with a lock word that is also the tail; every other method is
// lock-free with respect to Append.
type Log[T any] struct {
	// Hot line: written by every Append, read by every Read. fill is
	// guarded by the lock in tl; tl's parking lot after the word is
	// written only when an appender parks.
	closed atomic.Bool
	fill   struct {
		items []T // the items of the segment being filled (nil at first)
		n     int // how many of them are written
	}
	tl tailLock        // the tail (next offset to append; items below it are readable) and the appenders' lock
	_  [cacheLine]byte // keep producers' writes off the readers' lines

	// Read by every Read; written by Release and when a segment is added.
	head atomic.Int64 // released: every known group committed below it
	ring atomic.Pointer[ring[T]]
	size int64 // items per segment
	_    [cacheLine]byte

	// The writer's cold state, touched once per segment: only an append
	// (through nextSegment) uses it, under the lock in tl.
	segs struct {
		num   int64 // segment number of the one being filled
		first int64 // number of the oldest segment still in the ring
		free  []*segment[T]
	}
	maxFree   int
	commits   commits
	topic     string
	partition int
	onGroup   func(group string) // tells the backend a group committed here
}

// cacheLine is a common cache line size; padding by it keeps fields that
// different cores write from sharing a line.
const cacheLine = 64

func newLog[T any](topic string, partition int, cfg config, onGroup func(string)) *Log[T] {
	l := &Log[T]{
		size:      int64(cfg.segmentSize),
		maxFree:   cfg.maxFree,
		topic:     topic,
		partition: partition,
		onGroup:   onGroup,
	}
	l.tl.init()
	l.ring.Store(newRing[T](1))
	l.segs.num = -1 // no segment yet: the first Append adds segment 0
	// segs.free starts empty and grows by append as recycle fills it: up
	// front, a MaxFreeSegments the log never reaches would cost a pointer
	// a slot in every partition.
	return l
}

// Append stores items at the tail and returns the write, complete: the
// items are copied into segments and become visible to Read all at once,
// when the new tail is published, before Append returns. It allocates only
// when it needs a segment and the free list is empty. It is safe for
// concurrent use.
func (l *Log[T]) Append(items []T) (isb.Write, error) {
	first, ok := l.tl.lock()
	if !ok {
		return isb.Write{}, l.closedError()
	}
	f := &l.fill
	for rest := items; len(rest) > 0; {
		if f.n == len(f.items) {
			l.nextSegment()
		}
		k := copy(f.items[f.n:], rest)
		f.n += k
		rest = rest[k:]
	}
	// Publishing the tail last is what makes the slots above safe to read
	// without a lock: a reader that sees the new tail sees their contents.
	l.tl.unlock(first + int64(len(items)))
	return isb.Completed(first + int64(len(items)) - 1), nil
}

// AppendOne stores item at the tail: Append of one item, without a slice
// (which would escape to the heap through the interface call of the
// topic). It is safe for concurrent use.
func (l *Log[T]) AppendOne(item T) (isb.Write, error) {
	offset, ok := l.tl.lock()
	if !ok {
		return isb.Write{}, l.closedError()
	}
	f := &l.fill
	if f.n == len(f.items) {
		l.nextSegment()
	}
	f.items[f.n] = item
	f.n++
	l.tl.unlock(offset + 1)
	return isb.Completed(offset), nil
}

// Watch does nothing: the topic wakes its readers after its own appends,
// and nobody else appends to memory storage.
func (l *Log[T]) Watch(func()) {}

// Seal waits for the appends in flight and makes every later Append and
// AppendOne fail with an error matching isb.ErrClosed; reads, commits and
// releases go on until the Backend closes. The topic calls it when it
// closes. It is idempotent.
func (l *Log[T]) Seal() { l.tl.seal() }

// nextSegment makes the next segment current: it first recycles every
// segment lying wholly below the head, so a writer that keeps pace with its
// consumers reuses them instead of allocating.
func (l *Log[T]) nextSegment() {
	w := &l.segs
	num := w.num + 1
	r := l.ring.Load()
	l.recycle(r, num)
	var seg *segment[T]
	if k := len(w.free); k > 0 {
		seg = w.free[k-1]
		w.free[k-1] = nil
		w.free = w.free[:k-1]
	} else {
		seg = &segment[T]{items: make([]T, l.size)}
	}
	seg.base.Store(num * l.size)
	if num-w.first >= int64(len(r.slots)) {
		r = l.grow(r, num)
	}
	r.slot(num).Store(seg)
	w.num = num
	l.fill.items, l.fill.n = seg.items, 0
}

// recycle takes every segment before segment number upto whose items are all
// below the head out of the ring. Every known group has committed past them,
// and a group created later starts at Head(), so no reader may touch them
// again. Up to maxFree go to the free list, cleared so that the garbage
// collector can reclaim what their items referenced; the rest are dropped.
func (l *Log[T]) recycle(r *ring[T], upto int64) {
	w := &l.segs
	head := l.head.Load()
	for w.first < upto && (w.first+1)*l.size <= head {
		slot := r.slot(w.first)
		seg := slot.Load()
		slot.Store(nil)
		seg.base.Store(-1)
		if len(w.free) < l.maxFree {
			clear(seg.items)
			w.free = append(w.free, seg)
		}
		w.first++
	}
}

// grow publishes a ring with room for the live segments first..num. The old
// ring stays valid for readers that loaded it.
func (l *Log[T]) grow(old *ring[T], num int64) *ring[T] {
	r := newRing[T](2 * (num - l.segs.first + 1))
	for n := l.segs.first; n < num; n++ {
		r.slot(n).Store(old.slot(n).Load())
	}
	l.ring.Store(r)
	return r
}

// Read returns up to max items from offset, Head() <= offset < Tail(). The
// result is a slice of the segment itself (buf is not used): no copy, no
// allocation, never crossing a segment boundary, so it may hold fewer than
// max items. It is valid until offset is released (for a consumer: until its
// next Pull or Commit). Its capacity equals its length.
//
// Cost: one division and six atomic loads (closed, tail word, head, ring,
// slot, segment base), whatever the number of segments; no lock, no allocation.
func (l *Log[T]) Read(_ context.Context, offset int64, max int, _ []T) (int64, []T, error) {
	items, err := l.read(offset, max)
	return offset, items, err
}

// read is Read: memory offsets are contiguous, so its items are at offset.
func (l *Log[T]) read(offset int64, max int) ([]T, error) {
	if l.closed.Load() {
		return nil, l.closedError()
	}
	// Load the tail before the head and the ring: the ring may only have
	// gained the segment of a slot below the tail before the tail was stored.
	tail := l.tl.tail()
	head := l.head.Load()
	if offset < head || offset >= tail {
		return nil, l.offsetError("read", offset, head, tail)
	}
	if max < 1 {
		return nil, fmt.Errorf("%w: topic %q partition %d: read of %d items", ErrReadSize, l.topic, l.partition, max)
	}
	num := offset / l.size
	base := num * l.size
	seg := l.ring.Load().slot(num).Load()
	if seg == nil || seg.base.Load() != base {
		// Only a caller reading an offset released meanwhile gets here.
		return nil, l.offsetError("read", offset, l.head.Load(), l.tl.tail())
	}
	i := offset - base
	end := min(i+int64(max), l.size, tail-base)
	return seg.items[i:end:end], nil
}

// Head is the earliest retained offset: the highest offset released so far
// (0 before any release). Items below it are gone even if their segment has
// not been recycled yet, so a group created now starts where every known
// group has already committed.
func (l *Log[T]) Head() int64 { return l.head.Load() }

// Tail is the offset the next Append will use.
func (l *Log[T]) Tail() int64 { return l.tl.tail() }

// Count is to-from: memory offsets are contiguous.
func (l *Log[T]) Count(from, to int64) int64 { return to - from }

// Commit records, in memory, that group has consumed every offset below
// offset (0 <= offset <= Tail()). Commits never move backwards: a lower
// offset than the stored one is a no-op.
func (l *Log[T]) Commit(_ context.Context, group string, offset int64) error {
	if l.closed.Load() {
		return l.closedError()
	}
	if tail := l.tl.tail(); offset < 0 || offset > tail {
		return l.offsetError("commit", offset, l.head.Load(), tail)
	}
	if l.commits.commit(group, offset) && l.onGroup != nil {
		l.onGroup(group)
	}
	return nil
}

// Committed returns group's commit on this partition, or (Head(), false)
// when it has none. It never fails.
func (l *Log[T]) Committed(group string) (offset int64, ok bool, err error) {
	if v := l.commits.get(group); v != nil {
		return v.Load(), true, nil
	}
	return l.head.Load(), false, nil
}

// deleteGroup forgets group's commit on this partition.
func (l *Log[T]) deleteGroup(group string) { l.commits.remove(group) }

// Release moves the head to offset (0 <= offset <= Tail()); a lower offset
// than the current head is a no-op. The segments wholly below the new head
// are recycled the next time the writer needs a segment.
func (l *Log[T]) Release(offset int64) error {
	if l.closed.Load() {
		return l.closedError()
	}
	if tail := l.tl.tail(); offset < 0 || offset > tail {
		return l.offsetError("release", offset, l.head.Load(), tail)
	}
	storeMax(&l.head, offset)
	return nil
}

func (l *Log[T]) close() {
	l.Seal()
	l.closed.Store(true)
}

func (l *Log[T]) offsetError(op string, offset, head, tail int64) error {
	return &OffsetError{Topic: l.topic, Partition: l.partition, Op: op, Offset: offset, Head: head, Tail: tail}
}

func (l *Log[T]) closedError() error {
	return fmt.Errorf("memory: topic %q partition %d: %w", l.topic, l.partition, isb.ErrClosed)
}
