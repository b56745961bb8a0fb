package isb

import (
	"context"
	"errors"
)

// Staged writes: an append whose completion overlaps with the next append.
//
// A durable Append completes only once its items are flushed (isb/mmap),
// or acknowledged by a server (isb/jetstream): a round trip that costs
// about as much for one item as for a thousand. A producer that appends
// batch after batch from one goroutine (a pipeline's source) therefore
// pays one round trip per batch, serially, and no group flush can help it:
// nobody else appends while it waits. On storage that declares
// Caps.Deferred, [Producer.StageTo] returns the write without waiting for
// it, so such a producer copies its next batch while the previous one is
// being flushed or acknowledged:
//
//	producer   StageTo: admit, Log.Append (stored after the last ones, not visible)
//	           ... stages the next batches, up to the caller's bound ...
//	waiter     Pending.Wait: the Write completes (flushed, Tail moves), readers wake
//
// Readers never see a staged item before its write completes, so they
// never see an item a crash could take back; a caller that must not
// confirm an item before it is durable (a source acknowledging its input)
// confirms it after Wait. One flush completes everything staged before it,
// so the Waits of the batches behind it return at once: under load each
// flush covers the batches staged while the previous one ran.

// Pending is a write of [Producer.StageTo]: its items are stored in order
// after everything produced before them, and become durable and visible by
// Wait. The zero Pending is a write with nothing left to wait for.
type Pending[T any] struct {
	t    *Topic[T]
	part int
	w    Write
	n    int64 // capacity units the write holds until it is published
	last int64 // the offset of the write's last item; -1 until known
}

// Last is the offset of the write's last item, as ProduceTo returns it.
// Storage that learns offsets only at completion (JetStream) reports -1
// until Wait returned nil.
func (p Pending[T]) Last() int64 { return p.last }

// Wait returns once the write's items are durable as the topic's storage
// requires and visible to consumers, whose Pulls it wakes, with the offset
// of its last item. Call it once per Pending, from any goroutine; writes to
// one partition may be waited in any order (one flush publishes every
// write staged before it). After the topic is closed it returns ErrClosed
// (the items were never published). On error the items never become
// visible and their capacity is released.
func (p *Pending[T]) Wait() error {
	if p.t == nil {
		return nil
	}
	t := p.t
	last, err := t.complete(p.part, p.w)
	if err != nil {
		if t.gate != nil {
			t.gate.release(p.n)
		}
		return err
	}
	p.last = last
	t.parts[p.part].waiters.notify()
	return nil
}

// Stages reports whether the topic's storage defers the completion of
// writes (Caps.Deferred), so that a caller of StageTo gains by keeping
// several writes in flight.
func (t *Topic[T]) Stages() bool { return t.caps.Deferred }

// StageTo is [Producer.ProduceTo] that does not wait for the write: it
// returns once items are stored in partition, in order after everything
// produced there before, and the Pending's Wait returns once they are
// durable and visible. Capacity is admitted as ProduceTo admits it, and
// released by consumers' commits once the items are published, so a caller
// that waits for room must have its earlier writes waited by another
// goroutine (their items cannot be consumed before they are published).
//
// On storage whose writes complete at once, and for a batch larger than a
// bounded topic's capacity (stored in slices that each wait for room),
// StageTo is ProduceTo and the Pending is already done. With no items the
// Pending is done and Last is -1.
func (p *Producer[T]) StageTo(ctx context.Context, partition int, items []T) (Pending[T], error) {
	t := p.topic
	if partition < 0 || partition >= t.cfg.partitions || len(items) == 0 ||
		!t.caps.Deferred || (t.gate != nil && int64(len(items)) > t.cfg.capacity) {
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
	w, err := t.appendItems(partition, items)
	if err != nil && errors.Is(err, ErrFull) { // storage that enforces its own limits
		var last int64
		if last, err = t.storageFull(ctx, p.mode(), partition, items, err); err == nil {
			t.parts[partition].waiters.notify()
			return Pending[T]{last: last}, nil // appended and waited, not staged
		}
	}
	if err != nil {
		if t.gate != nil {
			t.gate.release(n)
		}
		return Pending[T]{last: -1}, err
	}
	return Pending[T]{t: t, part: partition, w: w, n: n, last: w.Last()}, nil
}
