package tracker

// fifo holds a partition's entries that were inserted above every offset it
// held: a reader inserts its offsets in ascending order, so in steady state
// every entry lives here and the B-tree stays empty. An insert appends, a
// delete finds its entry by binary search and leaves a tombstone, and the
// head skips tombstones, so the FIFO path of a message (insert, ack, commit
// point) costs an append and a search instead of two B-tree walks. Entries
// inserted below the highest offset it holds (a reader that rewinds, a
// caller inserting out of order) go to the B-tree, which keeps the
// tracker's contract for any order.
//
// items[head:] are ascending; those marked gone are tombstones. live counts
// the others. The slice is compacted when the head has passed half of it,
// so memory stays proportional to what is in flight.
type fifo[A any] struct {
	items []fifoEntry[A]
	head  int
	live  int
}

type fifoEntry[A any] struct {
	entry[A]
	gone bool
}

// compactAfter is how many dead slots at the front a fifo tolerates before
// it moves the rest down (and only once they are half of it).
const compactAfter = 256

// above reports whether off is above every offset the fifo holds (live or
// tombstone), so that push keeps it ascending.
func (q *fifo[A]) above(off int64) bool {
	return q.head == len(q.items) || off > q.items[len(q.items)-1].offset
}

// push appends e; q.above(e.offset) must hold.
func (q *fifo[A]) push(e entry[A]) {
	q.items = append(q.items, fifoEntry[A]{entry: e})
	q.live++
}

// find returns the index of the live entry of off, or -1. The head is
// tried first: acks come mostly in order.
func (q *fifo[A]) find(off int64) int {
	lo, hi := q.head, len(q.items) // search items[lo:hi] for the first offset >= off
	if lo < hi && q.items[lo].offset < off {
		lo++
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if q.items[mid].offset < off {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
	}
	if lo == len(q.items) || q.items[lo].offset != off || q.items[lo].gone {
		return -1
	}
	return lo
}

// findAfter is find for off with a hint: i is where the previous offset
// of a chunk was found. A chunk of consecutive offsets acked together lies
// at consecutive indices, so each after the first costs a compare instead
// of a search. A stale hint (a removal moved the entries) costs nothing
// but the search: offsets are unique, so an entry at i+1 holding off is
// off's.
func (q *fifo[A]) findAfter(off int64, i int) int {
	if j := i + 1; i >= q.head && j < len(q.items) && q.items[j].offset == off {
		if q.items[j].gone {
			return -1
		}
		return j
	}
	return q.find(off)
}

// remove deletes the live entry at index i (from find) and returns it.
func (q *fifo[A]) remove(i int) entry[A] {
	e := q.items[i].entry
	q.items[i].gone = true
	var zero A
	q.items[i].ack = zero // do not keep the payload alive
	q.live--
	for q.head < len(q.items) && q.items[q.head].gone {
		q.head++
	}
	switch {
	case q.head == len(q.items):
		q.items, q.head = q.items[:0], 0
	case q.head >= compactAfter && q.head >= len(q.items)/2:
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	return e
}

// min returns the lowest live entry.
func (q *fifo[A]) min() (entry[A], bool) {
	if q.head == len(q.items) {
		return entry[A]{}, false
	}
	return q.items[q.head].entry, true // the head is never a tombstone
}
