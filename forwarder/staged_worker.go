package forwarder

import (
	"context"
	"sync"
	"sync/atomic"
)

// Staged workers.
//
// A map worker writes its chunk's outputs and then waits for them to be
// durable before it acks the chunk; on durable storage that wait is a
// flush. The Concurrency workers of a replica share flushes (see
// isb/mmap's group flush), but each has at most one chunk in the write
// phase, so one flush covers at most Concurrency chunks, and the workers
// map nothing while they wait. When the vertex's edges stage writes
// (isb.StagedLog), a worker stages its outputs instead and hands the chunk
// to its completer, which waits for the writes and acks the chunk, in the
// worker's chunk order, while the worker maps the next chunks:
//
//	worker      handler: map, Writer.Stage            -> completer
//	completer   pendingWrite.complete (flush, watermarks), ack the chunk
//
// A reduce worker with a WAL does the same with its chunk's log appends
// (reduce_wal.go's loggedChunk). A chunk is acked only after its outputs
// are durable, as before. The
// messages a replica holds are still bounded by MaxInFlight (the reader's
// permits are released by the acks), and the handler bounds its staged
// writes (stagedWrites per worker).

// stagedWrites is how many chunks a worker keeps staged: enough for a
// flush to cover several chunks of every worker.
const stagedWrites = 4

// pendingWrite is the staged writes of one chunk.
type pendingWrite interface {
	// complete waits for the writes and publishes their watermarks; it is
	// called once, by the worker's completer.
	complete() error
}

// stagedHandler processes one chunk and returns its staged writes (nil:
// nothing left to wait for). On error the chunk is nacked.
type stagedHandler[T any] func(ctx context.Context, chunk []inflight[T]) (pendingWrite, error)

// stagedChunk is a chunk whose writes are staged.
type stagedChunk[T any] struct {
	chunk []inflight[T]
	write pendingWrite
}

// runStagedWorker is a worker with a staged handler: it runs h on every
// chunk of ch, and its completer acks each chunk once its writes complete
// (nacks it after a failure, or once hard ended). It returns when ch is
// closed and every chunk is acked or nacked.
func runStagedWorker[T any](hard context.Context, r *reader[T], ch <-chan []inflight[T], h stagedHandler[T], failed *atomic.Bool, fail func(error)) {
	staged := make(chan stagedChunk[T], stagedWrites)
	var completer sync.WaitGroup
	completer.Go(func() {
		for s := range staged {
			// complete runs even when the chunk is nacked: it returns the
			// handler's buffer, and what it publishes is at most read again.
			err := s.write.complete()
			switch {
			case err != nil:
				r.nack(s.chunk)
				fail(err)
			case failed.Load() || hard.Err() != nil:
				r.nack(s.chunk)
			default:
				r.ack(s.chunk)
			}
		}
	})
	defer completer.Wait()
	defer close(staged)
	for chunk := range ch {
		if failed.Load() || hard.Err() != nil {
			r.nack(chunk)
			continue
		}
		w, err := h(hard, chunk)
		if err != nil {
			r.nack(chunk)
			fail(err)
			continue
		}
		if w == nil {
			r.ack(chunk)
			continue
		}
		staged <- stagedChunk[T]{chunk, w}
	}
}
