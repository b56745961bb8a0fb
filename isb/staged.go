package isb

import (
	"context"
	"errors"
)

// Staged writes: an append whose flush overlaps with the next append.
//
// A durable Append returns only once its items are flushed, and a flush is
// a round trip to the disk that costs about as much for one item as for a
// thousand. A producer that appends batch after batch from one goroutine
// (a pipeline's source) therefore pays one flush per batch, serially, and
// no group flush can help it: nobody else appends while it waits. Storage
// that implements [StagedLog] splits the append in two, so such a producer
// copies its next batch while the previous one is being flushed:
//
//	producer   StageTo: admit, copy items after the last staged ones (not visible)
//	           ... stages the next batches, up to the caller's bound ...
//	waiter     Pending.Wait: flush everything staged so far, publish it
//	           (Tail moves, readers wake), return
//
// Readers never see a staged item before it is published, so they never see
// an item a crash could take back; a caller that must not confirm an item
// before it is durable (a source acknowledging its input) confirms it after
// Wait. One flush publishes everything staged before it, so the Waits of
// the batches behind it return at once: under load each flush covers the
// batches staged while the previous one ran.

// StagedLog is a [Log] that splits Append into Stage and Publish. isb/mmap
// implements it; memory storage has nothing to flush and does not.
//
// Stage is called as Append is (under the topic's partition lock unless the
// Log is a [ConcurrentLog]), and orders with Append: an item appended after
// a Stage gets a later offset. Publish may run concurrently with Stage,
// Append, Read and with other Publish calls.
type StagedLog[T any] interface {
	Log[T]
	// Stage stores items after every item appended or staged before, and
	// returns the offset of the first, as Append does, but without
	// waiting for a flush: they become visible to readers only once
	// flushed and published, by a Publish (or an Append) of them or of a
	// later item. It must not keep items. On error nothing of items is
	// stored.
	Stage(items []T) (first int64, err error)
	// Publish returns once every item staged or appended below end is
	// flushed as the flush policy requires and visible (Tail >= end).
	// A failed flush fails this and every later Stage, Append and Publish
	// (an item must never become visible before an earlier one), and the
	// items it did not publish never become visible in this process.
	// Items staged and never published may still be on disk after Close
	// (flushed with a segment, for example): a writer that never learned
	// they were durable writes them again, as at-least-once allows.
	Publish(end int64) error
}

// Pending is a write of [Producer.StageTo]: its items are stored in order
// after everything produced before them, and become durable and visible by
// Wait. The zero Pending is a write with nothing left to wait for.
type Pending[T any] struct {
	t    *Topic[T]
	part int
	end  int64 // Publish(end); 0 with t nil: nothing to wait for
	n    int64 // capacity units the write holds until it is published
	last int64 // the offset of the write's last item
}

// Last is the offset of the write's last item, as ProduceTo returns it.
func (p Pending[T]) Last() int64 { return p.last }

// Wait returns once the write's items are durable as the topic's storage
// requires and visible to consumers, whose Pulls it wakes. Call it once per
// Pending, from any goroutine; writes to one partition may be waited in any
// order (one flush publishes every write staged before it). After the
// topic is closed it returns ErrClosed (the items were never published).
// On error the items never become visible and their capacity is released.
func (p Pending[T]) Wait() error {
	if p.t == nil {
		return nil
	}
	t := p.t
	pt := t.parts[p.part]
	pt.publishMu.RLock()
	if t.closed.Load() { // under publishMu: see Close
		pt.publishMu.RUnlock()
		return ErrClosed
	}
	err := pt.slog.Publish(p.end)
	pt.publishMu.RUnlock()
	if err != nil {
		if t.gate != nil {
			t.gate.release(p.n)
		}
		return t.appendErr(p.part, err)
	}
	pt.waiters.notify()
	return nil
}

// Stages reports whether the topic's storage stages writes ([StagedLog]),
// so that a caller of StageTo gains by keeping several writes in flight.
func (t *Topic[T]) Stages() bool { return t.parts[0].slog != nil }

// StageTo is [Producer.ProduceTo] that does not wait for the flush: it
// returns once items are stored in partition, in order after everything
// produced there before, and the Pending's Wait returns once they are
// durable and visible. Capacity is admitted as ProduceTo admits it, and
// released by consumers' commits once the items are published, so a caller
// that waits for room must have its earlier writes waited by another
// goroutine (their items cannot be consumed before they are published).
//
// On storage that does not stage writes, and for a batch larger than a
// bounded topic's capacity (stored in slices that each wait for room),
// StageTo is ProduceTo and the Pending is already done. With no items the
// Pending is done and Last is -1.
func (p *Producer[T]) StageTo(ctx context.Context, partition int, items []T) (Pending[T], error) {
	t := p.topic
	if partition < 0 || partition >= t.cfg.partitions || len(items) == 0 ||
		t.parts[partition].slog == nil || (t.gate != nil && int64(len(items)) > t.cfg.capacity) {
		last, err := p.ProduceTo(ctx, partition, items)
		return Pending[T]{last: last}, err
	}
	if err := ctx.Err(); err != nil {
		return Pending[T]{last: -1}, err
	}
	if t.closed.Load() {
		return Pending[T]{last: -1}, ErrClosed
	}
	n := int64(len(items))
	if _, _, err := t.admit(ctx, n, p.mode(), false); err != nil {
		return Pending[T]{last: -1}, err
	}
	first, err := t.stageItems(partition, items)
	if err != nil && errors.Is(err, ErrFull) { // storage that enforces its own limits
		var at int64
		if at, err = t.storageFull(ctx, p.mode(), partition, items, err); err == nil {
			t.parts[partition].waiters.notify()
			return Pending[T]{last: at + n - 1}, nil // appended, not staged
		}
	}
	if err != nil {
		if t.gate != nil {
			t.gate.release(n)
		}
		return Pending[T]{last: -1}, err
	}
	return Pending[T]{t: t, part: partition, end: first + n, n: n, last: first + n - 1}, nil
}

// stageItems stages items in partition part and returns the offset of the
// first, under the partition's lock unless its log serializes its own
// appends (as appendItems does for Append).
func (t *Topic[T]) stageItems(part int, items []T) (int64, error) {
	pt := t.parts[part]
	if pt.clog == nil {
		pt.mu.Lock()
		defer pt.mu.Unlock()
	}
	if t.closed.Load() { // under the lock when there is one: see Close
		return 0, ErrClosed
	}
	first, err := pt.slog.Stage(items)
	if err != nil {
		return 0, t.appendErr(part, err)
	}
	return first, nil
}
