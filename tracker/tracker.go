package tracker

import (
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"
)

// degree is the B-tree node degree. With 16, 5000 in-flight offsets fit in a
// tree of depth 2-3, and a FIFO insert+delete touches few nodes.
const degree = 16

// entry is one in-flight message of a partition. Entries are ordered by
// offset only; the watermark and payload ride along. The watermark is kept
// as nanoseconds (see toNanos): a time.Time makes the entry 16 bytes larger
// and carries a pointer, which made every B-tree search and shift slower
// (BenchmarkFIFO; docs/benchmarks.md).
type entry[A any] struct {
	offset    int64
	watermark int64
	ack       A
}

func lessOffset[A any](a, b entry[A]) bool { return a.offset < b.offset }

// partition is the in-flight state of one partition. mu guards every field
// below it; each partition has its own lock so that readers of different
// partitions and the acks of other partitions never contend.
type partition[A any] struct {
	mu   sync.Mutex
	fifo fifo[A]                 // entries inserted in ascending order: the common case
	tree *btree.BTreeG[entry[A]] // the others
	// head caches the lowest-offset entry's offset and watermark so that
	// LowestOffset and LowestWatermark do not search; it is refreshed from
	// min only when the head itself is inserted or deleted.
	headOffset int64
	headWM     int64
	nonEmpty   bool
}

// Tracker holds the in-flight offsets of a reader's partitions. A holds what
// the owner needs to ack an entry. It is safe for concurrent use.
type Tracker[A any] struct {
	parts []partition[A]
	n     atomic.Int64 // entries over all partitions, for a lock-free Len
}

// New returns a tracker for partitions 0..partitions-1. It panics if
// partitions < 1: a reader always has at least one partition, so that is a
// programming error, like a negative length to make.
func New[A any](partitions int) *Tracker[A] {
	if partitions < 1 {
		panic(fmt.Sprintf("tracker: New(%d): partitions must be at least 1", partitions))
	}
	t := &Tracker[A]{parts: make([]partition[A], partitions)}
	for i := range t.parts {
		t.parts[i].tree = btree.NewG(degree, lessOffset[A])
	}
	return t
}

// Partitions returns the number of partitions the tracker was created with.
func (t *Tracker[A]) Partitions() int { return len(t.parts) }

// part returns partition p, or nil when p is out of range.
func (t *Tracker[A]) part(p int) *partition[A] {
	if p < 0 || p >= len(t.parts) {
		return nil
	}
	return &t.parts[p]
}

// Insert records offset of partition as in flight with its watermark and
// ack payload. The watermark is kept to the nanosecond between the years
// 1678 and 2262 (outside, it is clamped to that range); the zero Time is kept
// as the zero Time. An offset already tracked is ErrTracked (the existing entry is
// kept); a partition outside 0..Partitions()-1 is ErrPartition.
func (t *Tracker[A]) Insert(partition int, offset int64, watermark time.Time, ack A) error {
	p := t.part(partition)
	if p == nil {
		return fmt.Errorf("%w: insert of offset %d into partition %d, want 0..%d",
			ErrPartition, offset, partition, len(t.parts)-1)
	}
	e := entry[A]{offset: offset, watermark: toNanos(watermark), ack: ack}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.insert(e); err != nil {
		return fmt.Errorf("%w: partition %d offset %d", err, partition, offset)
	}
	if !p.nonEmpty || offset < p.headOffset {
		p.headOffset, p.headWM, p.nonEmpty = offset, e.watermark, true
	}
	t.n.Add(1)
	return nil
}

// Delete removes offset of partition and returns its payload, and whether
// it was tracked. A partition out of range tracks nothing: (zero, false).
func (t *Tracker[A]) Delete(partition int, offset int64) (A, bool) {
	var zero A
	p := t.part(partition)
	if p == nil {
		return zero, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.delete(offset)
	if !ok {
		return zero, false
	}
	if offset == p.headOffset {
		h, ok := p.min()
		p.headOffset, p.headWM, p.nonEmpty = h.offset, h.watermark, ok
	}
	t.n.Add(-1)
	return e.ack, true
}

// InsertBatch is Insert of each of offsets, all with watermark and ack,
// under one lock of the partition: a reader tracks a batch (one
// partition, one watermark) in one call. It stops at the first offset
// tracked already (ErrTracked, the entries before it stay inserted).
func (t *Tracker[A]) InsertBatch(partition int, offsets iter.Seq[int64], watermark time.Time, ack A) error {
	p := t.part(partition)
	if p == nil {
		return fmt.Errorf("%w: insert into partition %d, want 0..%d", ErrPartition, partition, len(t.parts)-1)
	}
	wm := toNanos(watermark)
	n := int64(0)
	p.mu.Lock()
	defer func() {
		p.mu.Unlock()
		t.n.Add(n)
	}()
	for off := range offsets {
		e := entry[A]{offset: off, watermark: wm, ack: ack}
		if err := p.insert(e); err != nil {
			return fmt.Errorf("%w: partition %d offset %d", err, partition, off)
		}
		if !p.nonEmpty || off < p.headOffset {
			p.headOffset, p.headWM, p.nonEmpty = off, e.watermark, true
		}
		n++
	}
	return nil
}

// DeleteBatch is Delete of each of offsets under one lock of the
// partition; it returns how many of them were tracked.
func (t *Tracker[A]) DeleteBatch(partition int, offsets iter.Seq[int64]) int {
	p := t.part(partition)
	if p == nil {
		return 0
	}
	n := 0
	head := false
	hint := -1
	p.mu.Lock()
	for off := range offsets {
		if i := p.fifo.findAfter(off, hint); i >= 0 {
			p.fifo.remove(i)
			hint = i
		} else if _, ok := p.delete(off); !ok {
			continue
		}
		n++
		head = head || off == p.headOffset
	}
	if head {
		h, ok := p.min()
		p.headOffset, p.headWM, p.nonEmpty = h.offset, h.watermark, ok
	}
	p.mu.Unlock()
	t.n.Add(-int64(n))
	return n
}

// insert adds e to the fifo when it is above everything the fifo holds,
// to the B-tree otherwise; an offset tracked already is ErrTracked (the
// entry being processed stays). p.mu is held.
func (p *partition[A]) insert(e entry[A]) error {
	if p.fifo.above(e.offset) {
		// Not in the fifo; the tree may hold it only if it is not empty.
		if p.tree.Len() > 0 && p.tree.Has(e) {
			return ErrTracked
		}
		p.fifo.push(e)
		return nil
	}
	if p.fifo.find(e.offset) >= 0 {
		return ErrTracked
	}
	// One walk; a duplicate (rare: a redelivery) puts the entry that is
	// still being processed back, so it is not replaced.
	if old, replaced := p.tree.ReplaceOrInsert(e); replaced {
		p.tree.ReplaceOrInsert(old)
		return ErrTracked
	}
	return nil
}

// delete removes offset from whichever structure holds it. p.mu is held.
func (p *partition[A]) delete(offset int64) (entry[A], bool) {
	if i := p.fifo.find(offset); i >= 0 {
		return p.fifo.remove(i), true
	}
	if p.tree.Len() == 0 {
		return entry[A]{}, false
	}
	return p.tree.Delete(entry[A]{offset: offset})
}

// min returns the lowest tracked entry. p.mu is held.
func (p *partition[A]) min() (entry[A], bool) {
	f, fok := p.fifo.min()
	if p.tree.Len() == 0 {
		return f, fok
	}
	t, _ := p.tree.Min()
	if !fok || t.offset < f.offset {
		return t, true
	}
	return f, true
}

// LowestOffset returns the lowest in-flight offset of partition: the commit
// point. ok is false when nothing of that partition is in flight, and for a
// partition out of range.
func (t *Tracker[A]) LowestOffset(partition int) (offset int64, ok bool) {
	p := t.part(partition)
	if p == nil {
		return 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.headOffset, p.nonEmpty
}

// LowestWatermark returns the minimum over partitions of the watermark of
// each partition's oldest in-flight entry. ok is false when nothing is in
// flight. It costs one short lock per partition and no tree walk. The
// partitions are read one after another, so under concurrent updates the
// result is the minimum of per-partition snapshots, which is what a
// publisher needs: every entry it saw was in flight when it looked.
func (t *Tracker[A]) LowestWatermark() (wm time.Time, ok bool) {
	var low int64
	for i := range t.parts {
		p := &t.parts[i]
		p.mu.Lock()
		if p.nonEmpty && (!ok || p.headWM < low) {
			low, ok = p.headWM, true
		}
		p.mu.Unlock()
	}
	if !ok {
		return time.Time{}, false
	}
	return fromNanos(low), true
}

// Len returns the number of in-flight entries over all partitions.
func (t *Tracker[A]) Len() int { return int(t.n.Load()) }

// PartitionLen returns the number of in-flight entries of partition; 0 for
// a partition out of range.
func (t *Tracker[A]) PartitionLen(partition int) int {
	p := t.part(partition)
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fifo.live + p.tree.Len()
}
