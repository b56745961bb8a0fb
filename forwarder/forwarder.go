package forwarder

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/internal/keys"
	"github.com/runnel-dev/runnel/internal/replicactx"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// Config is what one replica of a vertex needs besides its function and
// buffers.
type Config struct {
	Vertex   string
	Replica  int
	Options  Options // validated
	Counters *Counters
	Logger   *zap.Logger // nil logs nothing
	Hooks    Hooks
	// Run identifies this run of the pipeline (optional): end-of-stream
	// messages carry it, and a reader ignores the ends of another run
	// (stale ones a killed run left in a durable buffer, see eos.go).
	Run string
	// Fail is called with the first fatal error of a worker, so that the
	// pipeline stops at once (the replica also returns it when it ends).
	// Optional.
	Fail func(error)
}

// Input is a replica's input buffer: its consumer, the buffer's partition
// count, and how many processors write to each partition. The consumer must
// use isb.ManualCommit (an auto commit on the next Pull would commit
// messages not yet acked) and a batch size of at most Options.BatchSize (the
// reader holds one permit per message, and acquires BatchSize permits per
// Pull).
type Input[T any] struct {
	Consumer   *isb.PullConsumer[vertex.Message[T]]
	Partitions int
	// Writers is the number of processors that write to each partition:
	// the replicas of every vertex feeding the buffer. Each ends its output
	// with an end-of-stream message per partition, and the replica ends once
	// it has read all of them on every partition it reads (see eos.go).
	// Zero: the input never ends by itself; the replica runs until stop.
	Writers int
}

// handler processes one chunk of messages; on nil every message of the
// chunk is acked. It belongs to one worker goroutine.
type handler[T any] func(ctx context.Context, chunk []inflight[T]) error

// chunking says how the reader splits a batch among the workers.
type chunking uint8

const (
	chunkSpread chunking = iota // equal chunks, any worker
	chunkByKey                  // by key hash, one worker per key (order per key)
	chunkWhole                  // the whole batch to one worker (batch map)
)

// runReplica runs one replica of a map or sink vertex: the reader, the
// workers and the idle loops, until its input has ended (end of stream from
// every writer on every partition it reads, and everything read acked:
// then it ends its own output, see eos.go), stop ends (it stops without
// ending its output, to be resumed later), or hard ends (the pipeline is
// failing). stop must be derived from hard. It returns after every
// goroutine it started has ended and every message is acked or nacked.
//
// out, when not nil, returns the replica's writer once the handlers are
// made; its idle loop runs when the publisher hook is an IdlePublisher.
func runReplica[T any](hard, stop context.Context, cfg Config, in Input[T], mode chunking, out func() output, newHandler func(r *reader[T]) handler[T]) error {
	return runReplicaParts(hard, stop, cfg, in, replicaParts[T]{mode: mode, out: out, newHandler: newHandler})
}

// replicaParts are the parts of a replica that differ by vertex kind.
type replicaParts[T any] struct {
	mode chunking
	// chunks is how many chunks chunkSpread cuts a batch into (0: one per
	// worker).
	chunks int
	// out returns the replica's writer once the handlers are made (nil:
	// no idle loop, no end of stream written).
	out func() output
	// newHandler makes the handler of one worker; it is called once per
	// worker, in worker order, from one goroutine.
	newHandler func(r *reader[T]) handler[T]
	// loop, when not nil, runs beside the reader (as the idle loops do)
	// until the replica has drained.
	loop func(ctx context.Context)
	// newStaged, when not nil, replaces newHandler: a worker's chunk is
	// acked once the writes its handler staged complete, which a
	// completer goroutine of the worker waits for while the worker goes
	// on with its next chunks (see staged_worker.go).
	newStaged func(r *reader[T]) stagedHandler[T]
	// end, when not nil, runs once the input has ended (every partition
	// read has ended and every worker is done, with no failure), before
	// the replica ends its output: a reduce replica closes its windows
	// there, so that its results precede its end of stream.
	end func(ctx context.Context, kind EndKind) error
	// anchors, when not nil, is told of every read batch and every commit:
	// a map replica on durable storage holds what it wrote for inputs whose
	// commit is not yet durable (map_resume.go).
	anchors *mapAnchors
}

// runReplicaParts is runReplica with every part.
func runReplicaParts[T any](hard, stop context.Context, cfg Config, in Input[T], parts replicaParts[T]) error {
	mode, out, newHandler := parts.mode, parts.out, parts.newHandler
	o := cfg.Options
	// User functions and sinks learn which replica calls them.
	hard = replicactx.With(hard, vertex.Replica{Vertex: cfg.Vertex, Index: cfg.Replica})
	r := newReader(in.Consumer, in.Partitions, in.Writers, o.BatchSize, o.MaxInFlight, cfg.Counters, cfg.Hooks.Fetcher)
	r.run = cfg.Run
	r.anchors = parts.anchors
	workers := o.Concurrency
	chans := make([]chan []inflight[T], 1)
	if mode == chunkByKey {
		chans = make([]chan []inflight[T], workers)
	}
	for i := range chans {
		chans[i] = make(chan []inflight[T], workers)
	}
	var failed atomic.Bool
	var workerErr error // the first worker error, written once under failed
	var wg sync.WaitGroup
	fail := func(err error) {
		if hard.Err() == nil && failed.CompareAndSwap(false, true) {
			workerErr = asProcessError(cfg, err)
			if cfg.Fail != nil {
				cfg.Fail(workerErr)
			}
		}
	}
	for i := range workers {
		ch := chans[i%len(chans)]
		if parts.newStaged != nil {
			h := parts.newStaged(r)
			wg.Go(func() { runStagedWorker(hard, r, ch, h, &failed, fail) })
			continue
		}
		h := newHandler(r)
		wg.Go(func() {
			for chunk := range ch {
				if failed.Load() || hard.Err() != nil {
					r.nack(chunk)
					continue
				}
				if err := h(hard, chunk); err != nil {
					r.nack(chunk)
					fail(err)
					continue
				}
				r.ack(chunk)
			}
		})
	}
	idleCtx, stopIdle := context.WithCancel(hard)
	var idleWG sync.WaitGroup
	// The idle loops run until the replica has drained.
	if f, ok := cfg.Hooks.Fetcher.(IdleFetcher); ok {
		idleWG.Go(func() { r.idleLoop(idleCtx, f, cfg.Hooks.idleInterval(), in.Consumer.Assigned()) })
	}
	if ip, ok := cfg.Hooks.Publisher.(IdlePublisher); ok && out != nil {
		w := out()
		idleWG.Go(func() { w.idleLoop(idleCtx, ip, cfg.Hooks.idleInterval(), failWith(cfg)) })
	}
	if parts.loop != nil {
		idleWG.Go(func() { parts.loop(idleCtx) })
	}
	send := func(ch chan []inflight[T], chunk []inflight[T]) bool {
		select {
		case ch <- chunk:
			return true
		case <-hard.Done():
			r.nack(chunk)
			return false
		}
	}
	per := make([]*batchBuf[T], workers) // chunkByKey: the reader goroutine's scratch
	dispatch := func(items []inflight[T]) bool {
		switch mode {
		case chunkWhole:
			return send(chans[0], items)
		case chunkByKey:
			// Each worker's share is copied into a pooled batch of its own,
			// which its acks return to the pool: steady keyed reading does
			// not allocate (a slice per worker and batch cost a reduce
			// vertex 400 B per message).
			for i := range items {
				// The hash the writer routed by, spread over the
				// workers: the same worker for the same keys in every
				// process, nil and {""} told apart (internal/keys).
				k := keys.Spread(keys.Hash(items[i].msg.Keys), workers)
				b := per[k]
				if b == nil {
					b = r.pooledBatch()
					per[k] = b
				}
				it := items[i]
				it.owner = b
				b.items = append(b.items, it)
			}
			// The batch is copied out: it goes back to the pool now; the
			// copies carry the permits.
			r.recycle(items)
			ok := true
			for k, b := range per {
				if b == nil {
					continue
				}
				per[k] = nil
				chunk := b.items
				b.left.Store(int64(len(chunk)))
				if !ok {
					r.nack(chunk)
					continue
				}
				ok = send(chans[k], chunk)
			}
			return ok && !failed.Load()
		}
		chunks := workers
		if parts.chunks > 0 {
			chunks = parts.chunks
		}
		size := (len(items) + chunks - 1) / chunks
		for len(items) > 0 {
			n := min(size, len(items))
			if !send(chans[0], items[:n:n]) {
				r.nack(items[n:])
				return false
			}
			items = items[n:]
		}
		return !failed.Load()
	}
	err := r.loop(stop, dispatch)
	for _, ch := range chans {
		close(ch)
	}
	wg.Wait()
	var endErr error
	if parts.end != nil && r.ended() && err == nil && !failed.Load() && hard.Err() == nil {
		endErr = parts.end(hard, r.ends.Kind())
	}
	derr := r.drain()
	// The idle loops stop before the end of stream is written: no idle
	// control message follows it.
	stopIdle()
	idleWG.Wait()
	if err != nil {
		return asProcessError(cfg, err)
	}
	if workerErr != nil { // wg.Wait ordered the write before this read
		return workerErr
	}
	if endErr != nil {
		return asProcessError(cfg, endErr)
	}
	if derr != nil && !errors.Is(derr, isb.ErrClosed) {
		return asProcessError(cfg, derr)
	}
	if r.ended() && out != nil && hard.Err() == nil {
		// Everything read is acked, so everything written is written.
		if err := out().WriteEnd(hard, cfg.Processor(), r.ends.Kind()); err != nil && hard.Err() == nil {
			return asProcessError(cfg, err)
		}
	}
	return nil
}

// pooledBatch returns an empty batch from the reader's pool (a new one
// when the pool has none).
func (r *reader[T]) pooledBatch() *batchBuf[T] {
	if b, _ := r.pool.Get().(*batchBuf[T]); b != nil {
		return b
	}
	return &batchBuf[T]{items: make([]inflight[T], 0, r.batch)}
}

// output is a Writer of any element type, as runReplica runs its idle loop
// and ends its output.
type output interface {
	idleLoop(ctx context.Context, idle IdlePublisher, every time.Duration, fail func(error))
	WriteEnd(ctx context.Context, processor string, kind EndKind) error
}

// failWith returns the function that fails the pipeline with an error of
// the replica (nil when cfg has no Fail).
func failWith(cfg Config) func(error) {
	if cfg.Fail == nil {
		return nil
	}
	return func(err error) { cfg.Fail(asProcessError(cfg, err)) }
}

// asProcessError names the vertex and replica in err unless it already does.
func asProcessError(cfg Config, err error) error {
	var pe *ProcessError
	if errors.As(err, &pe) {
		return err
	}
	return &ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica, Err: err}
}

// exhausted applies the retry policy's verdict to a message whose attempts
// are used up: it returns nil when the message is to be dropped (and
// counts it), or the error that fails the pipeline.
func exhausted(ctx context.Context, cfg Config, id string, attempts int, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if cfg.Options.Retry.OnExhausted == vertex.DropMessage {
		cfg.Counters.dropped.Add(1)
		if cfg.Logger != nil {
			cfg.Logger.Warn("message dropped after retries", zap.String("vertex", cfg.Vertex),
				zap.Int("replica", cfg.Replica), zap.String("id", id), zap.Int("attempts", attempts), zap.Error(err))
		}
		return nil
	}
	return &ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica, MessageID: id, Attempts: attempts, Err: err}
}
