package tracker

import (
	"errors"
	"time"
)

// ErrTracked is returned by Insert for an offset already in flight.
var ErrTracked = errors.New("tracker: offset already tracked")

// Tracker holds the in-flight offsets of a reader's partitions. A holds what
// the owner needs to ack an entry. It is safe for concurrent use.
type Tracker[A any] struct {
	// TODO(issue 4): per-partition btree.BTreeG with a mutex each.
}

// New returns a tracker for partitions 0..partitions-1.
func New[A any](partitions int) *Tracker[A] { panic("tracker: not implemented") }

// Insert records offset of partition as in flight with its watermark and
// ack payload. An offset already tracked is ErrTracked.
func (t *Tracker[A]) Insert(partition int, offset int64, watermark time.Time, ack A) error {
	panic("tracker: not implemented")
}

// Delete removes offset of partition and returns its payload, and whether
// it was tracked.
func (t *Tracker[A]) Delete(partition int, offset int64) (A, bool) {
	panic("tracker: not implemented")
}

// LowestOffset returns the lowest in-flight offset of partition: the commit
// point. ok is false when nothing of that partition is in flight.
func (t *Tracker[A]) LowestOffset(partition int) (offset int64, ok bool) {
	panic("tracker: not implemented")
}

// LowestWatermark returns the minimum over partitions of the watermark of
// each partition's oldest in-flight entry. ok is false when nothing is in flight.
func (t *Tracker[A]) LowestWatermark() (wm time.Time, ok bool) {
	panic("tracker: not implemented")
}

// Len returns the number of in-flight entries over all partitions.
func (t *Tracker[A]) Len() int { panic("tracker: not implemented") }
