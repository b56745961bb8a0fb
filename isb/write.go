package isb

import "context"

// Write is the completion of one Log.Append: the offset of its last item
// and, for storage that declared Caps.Deferred, the wait until the items
// are stored and readable.
//
// It is a value of two words, not a pointer, so that storage whose writes
// complete at once (memory) returns one without an allocation and the
// single-item produce pays for no more than an offset; deferred storage
// keeps the state of its writes behind a [Completer] it owns (isb/mmap:
// the partition itself, which publishes up to the write's last offset;
// isb/jetstream: the batch's acknowledgements).
//
//	w, err := log.Append(items)  // stored in order, maybe not yet readable
//	last, err := w.Wait(ctx)     // readable; last is the last item's offset
type Write struct {
	c    Completer // nil: complete
	last int64     // the last item's offset; for a deferred write -1 until known
}

// A Completer completes the deferred Writes of one storage.
type Completer interface {
	// Complete waits until the write whose last item Append put at last
	// (-1 when it did not know) is stored and readable, and returns the
	// offset of that item. A failure means
	// the write's items are not stored (never readable in this process).
	// Complete is called at most once per Write, from any goroutine; the
	// Writes of one log may be completed in any order. When ctx ends it
	// returns ctx.Err() and the write stays in flight: storage completes or
	// fails it by itself (a flush of later writes, an acknowledgement
	// timeout), so nothing waits for a caller that gave up.
	Complete(ctx context.Context, last int64) (int64, error)
}

// Completed returns a write that is complete, its last item at offset last.
func Completed(last int64) Write { return Write{last: last} }

// Deferred returns a write that c completes: Wait calls c.Complete(ctx,
// last). last is the offset of its last item when storage knows it
// already (mmap assigns offsets as it copies), -1 when it learns it only
// at completion (JetStream, whose Completer is the write itself).
func Deferred(c Completer, last int64) Write { return Write{c: c, last: last} }

// Pending reports whether the write still has to be waited for.
func (w Write) Pending() bool { return w.c != nil }

// Last is the offset of the write's last item, exact once Wait returned
// nil; -1 while storage does not know it yet.
func (w Write) Last() int64 { return w.last }

// Wait returns once the write's items are stored and readable, with the
// offset of its last item. Call it once per Write; a complete write
// returns at once.
func (w Write) Wait(ctx context.Context) (last int64, err error) {
	if w.c == nil {
		return w.last, nil
	}
	return w.c.Complete(ctx, w.last)
}
