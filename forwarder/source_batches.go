package forwarder

import (
	"context"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/runnel-dev/runnel/vertex"
)

// Pipelined source batches.
//
// On durable storage a write returns once flushed, and a source replica
// writes batch after batch from one goroutine: alone, it would pay one
// flush per batch, one after the other, and no group flush can help it
// (nobody else writes to its buffers meanwhile). When its edges stage
// writes (isb.Caps.Deferred), the replica keeps up to sourceStagedBatches
// batches in flight instead:
//
//	source loop   take a free batch, read, stamp, Writer.Stage (stored,
//	              not visible), hand it to the completer, read the next
//	completer     Writer.Complete (flush, publish, watermarks), ack to the
//	              source, free the batch; strictly in read order
//
// (the ordered completer of completer.go)
// so a flush runs while the loop reads and copies the next batches, and
// one flush publishes every batch staged before it. What the source is
// told stays as strict as before: a batch is acked only once its outputs
// are durable, batches are acked in the order they were read, and after a
// failure nothing later is acked. Watermarks are published after the
// flush, for offsets readers can read. Storage that does not stage
// (memory) keeps one batch, completed inline: the loop is the serial one.

// sourceStagedBatches is how many batches a source replica keeps in flight
// on storage that stages writes: the batches staged while one flush runs
// and those waiting for the next, so that the loop rarely waits for a free
// batch (with 4, a trace of the durable benchmark showed the loop often
// waiting for one: docs/benchmarks.md). It bounds the messages read and
// not acked to this many batches (MaxInFlight is not a source option).
const sourceStagedBatches = 8

// sourceBatch is one read batch of a source replica, from its read to its
// ack; batches are reused.
type sourceBatch[T any] struct {
	msgs []vertex.Message[T] // what the read returned
	read []vertex.Message[T] // the buffer a BufferedSource fills
	out  WriteBuffer[T]      // the batch's writes, until Complete
	// snap is, for a resumed source, the tails of its scanned buffers when
	// the batch was registered (see SourceResume).
	snap []int64
	// readAt is when the read returned: the ack observes the time since.
	readAt time.Time
}

// sourceBatches owns a replica's batches and, when it keeps more than
// one in flight, their completer.
type sourceBatches[T any] struct {
	free chan *sourceBatch[T] // batches not in flight
	// done completes the staged batches in read order; nil when batches
	// complete inline.
	done   *completer[*sourceBatch[T]]
	ran    chan struct{}               // closed when the completer returned
	finish func(*sourceBatch[T]) error // complete, ack and count a batch
	drop   func(*sourceBatch[T])       // count a batch that is never acked
}

// newSourceBatches makes depth batches, each with a read buffer of
// readSize messages (0: the source allocates its own), and a completer
// when depth > 1.
func newSourceBatches[T any](depth, readSize int, finish func(*sourceBatch[T]) error, drop func(*sourceBatch[T])) *sourceBatches[T] {
	s := &sourceBatches[T]{free: make(chan *sourceBatch[T], depth), ran: make(chan struct{}), finish: finish, drop: drop}
	for range depth {
		b := &sourceBatch[T]{}
		if readSize > 0 {
			b.read = make([]vertex.Message[T], readSize)
		}
		s.free <- b
	}
	if depth > 1 {
		s.done = newCompleter(depth, s.settle, s.abandon)
	}
	return s
}

// start runs the completer, if any, in g.
func (s *sourceBatches[T]) start(g *errgroup.Group) {
	if s.done == nil {
		close(s.ran)
		return
	}
	g.Go(func() error {
		defer close(s.ran)
		return s.done.run()
	})
}

// settle finishes a staged batch and frees it.
func (s *sourceBatches[T]) settle(b *sourceBatch[T]) error {
	err := s.finish(b)
	s.free <- b
	return err
}

// abandon drops a staged batch (nothing after a failed batch is acked)
// and frees it.
func (s *sourceBatches[T]) abandon(b *sourceBatch[T]) {
	s.drop(b)
	s.free <- b
}

// take returns a batch that is not in flight, waiting for the completer to
// free one; nil once ctx ended (hard ended, or the completer failed).
func (s *sourceBatches[T]) take(ctx context.Context) *sourceBatch[T] {
	if ctx.Err() != nil {
		return nil
	}
	select {
	case b := <-s.free:
		return b
	case <-ctx.Done():
		return nil
	}
}

// submit hands a staged batch on: to the completer, or completed inline
// (whose error it returns). A batch staged is completed and acknowledged
// even once hard ended, as its writes were (only a failure before it drops
// it): the queue is never left behind on a context, and never waits, as
// there are only depth batches.
func (s *sourceBatches[T]) submit(b *sourceBatch[T]) error {
	if s.done == nil {
		return s.settle(b)
	}
	s.done.submit(context.Background(), b)
	return nil
}

// put returns a batch that was taken and not staged (an empty read).
func (s *sourceBatches[T]) put(b *sourceBatch[T]) { s.free <- b }

// close waits until every batch handed to the completer is finished, or
// the completer failed.
func (s *sourceBatches[T]) close() {
	if s.done != nil {
		s.done.close()
	}
	<-s.ran
}

// abandonRest drops the batches a failed completer left; it is called
// once close returned.
func (s *sourceBatches[T]) abandonRest() {
	if s.done != nil {
		s.done.abandonRest()
	}
}
