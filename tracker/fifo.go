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
	lo := q.head
	if lo < len(q.items) && q.items[lo].offset < off {
		lo = q.search(off, lo+1)
	}
	return q.liveAt(lo, off)
}

// findAfter is find for off with a hint: i is where the previous offset
// of a chunk was found. A chunk's offsets ascend, so off lies after i
// whenever the entry at i is below it, and mostly close after it: a chunk
// of consecutive offsets at i+1, a reduce shard's chunk (the read batch's
// offsets of the shard's keys) a few entries on. A short scan from i+1,
// then a search of the rest, replaces the search from the head, which
// was a tenth of the keyed count's CPU samples. The hint needs no
// freshness: items ascend over the whole slice (tombstones too), so an
// entry at i below off, whatever moved there, says off is after i.
func (q *fifo[A]) findAfter(off int64, i int) int {
	if i < 0 || i >= len(q.items) || q.items[i].offset >= off {
		return q.find(off)
	}
	lo := max(i+1, q.head)
	for end := min(lo+scanAhead, len(q.items)); lo < end; lo++ {
		if q.items[lo].offset >= off {
			return q.liveAt(lo, off)
		}
	}
	return q.liveAt(q.search(off, lo), off)
}

// scanAhead is how many entries findAfter compares one by one before it
// searches: a reduce's shards split a read batch about evenly, so the next
// offset of a shard's chunk is a few entries on.
const scanAhead = 8

// search returns the first index in [lo, len(items)) whose offset is at
// least off (len(items) when none is).
func (q *fifo[A]) search(off int64, lo int) int {
	hi := len(q.items)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if q.items[mid].offset < off {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// liveAt returns i when the entry at i is off's and live, else -1.
func (q *fifo[A]) liveAt(i int, off int64) int {
	if i >= len(q.items) || q.items[i].offset != off || q.items[i].gone {
		return -1
	}
	return i
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
