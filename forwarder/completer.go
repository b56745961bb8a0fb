package forwarder

import "context"

// The ordered completer: write now, acknowledge once durable, in read
// order.
//
// On durable storage a write is done once flushed, and a flush costs about
// as much for one message as for many. A loop that waited for each of its
// writes would pay one flush after the other, and do nothing meanwhile.
// Where the buffers defer writes (isb.Caps.Deferred), or a reduce hands its
// entries to the WAL without waiting (wal.AppendAsync), the loop hands its
// work on to a completer instead, with the completion of the work's
// writes, and goes on with the next:
//
//	loop        read, process, write (staged)   -> completer
//	completer   completion.complete (flush, watermarks), then acknowledge
//
// The completer settles the work in the order it was handed on, one piece
// at a time, and stops at the first failure: nothing is acknowledged
// before it is durable, nothing out of order, nothing after a failure.
// Three loops use it:
//
//	source replica   a read batch; its outputs staged (Writer.Stage);
//	                 acknowledged to the source (source_batches.go)
//	map replica      a chunk; its outputs staged (stagedOutputs);
//	                 acked to the input buffer
//	reduce replica   a chunk; its WAL entries appended (loggedChunk);
//	                 acked to the input buffer
//
// The storage layers keep their own pending types (isb.Pending,
// wal.Pending); a completion wraps one or several of them.

// completion is a write in flight. A nil completion is complete: what a
// handler of a synchronous kind returns.
type completion interface {
	// complete waits until the write is durable and visible (and
	// publishes its watermarks). It is called once, by the completer, also
	// for work given up after a failure: it returns the buffers the write
	// holds.
	complete() error
}

// completer settles the work of one loop in submission order, on a
// goroutine of its own that runs run. J is the work: a chunk and its
// completion, a source batch.
type completer[J any] struct {
	queue chan J
	// settle waits for j's writes and acknowledges j; on error j is not
	// acknowledged and run returns the error.
	settle func(J) error
	// abandon gives j up without acknowledging it: after a failure, or
	// once the loop stops at once.
	abandon func(J)
}

// newCompleter returns a completer that holds up to depth submitted jobs.
func newCompleter[J any](depth int, settle func(J) error, abandon func(J)) *completer[J] {
	return &completer[J]{queue: make(chan J, depth), settle: settle, abandon: abandon}
}

// submit hands j to the completer; it waits while depth jobs are queued.
// Once ctx ended (the completer failed, or the loop stops at once) it
// abandons j instead.
func (c *completer[J]) submit(ctx context.Context, j J) {
	select {
	case c.queue <- j:
	case <-ctx.Done():
		c.abandon(j)
	}
}

// run settles the submitted jobs in order until close. It returns the
// first failure at once: the jobs queued after it are abandonRest's.
func (c *completer[J]) run() error {
	for j := range c.queue {
		if err := c.settle(j); err != nil {
			return err
		}
	}
	return nil
}

// close ends the submissions; run returns once it has settled the jobs
// submitted before. It is called once, after the last submit.
func (c *completer[J]) close() { close(c.queue) }

// abandonRest gives up the jobs a failed run left queued. It is called
// once close was called and run returned.
func (c *completer[J]) abandonRest() {
	for j := range c.queue {
		c.abandon(j)
	}
}
