package forwarder

import (
	"context"
	"errors"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/runnel-dev/runnel/internal/replicactx"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// handler processes one chunk of messages for one worker, the same
// signature for every vertex kind. It returns the chunk's writes still in
// flight: nil when they are done (a synchronous kind: memory storage, a
// sink), and then the chunk is acked at once; otherwise the replica's
// completer acks it once they are durable. On error the chunk is nacked
// and the replica fails.
type handler[T any] func(ctx context.Context, chunk []inflight[T]) (completion, error)

// chunking says how the reader splits a batch among the workers.
type chunking uint8

const (
	chunkSpread chunking = iota // equal chunks, any worker
	chunkByKey                  // by key hash, one worker per key (order per key)
	chunkWhole                  // the whole batch to one worker (batch map)
)

// stage is the part of a replica that differs by vertex kind: how a batch
// is split, what each worker does with its chunks, and where the replica
// writes.
type stage[T any] struct {
	mode chunking
	// chunks is how many chunks chunkSpread cuts a batch into (0: one per
	// worker).
	chunks int
	// handlers has one handler per worker (Options.Concurrency of them).
	handlers []handler[T]
	// stages says that handlers may return completions: each worker then
	// has a completer.
	stages bool
	// out is the replica's output (nil: a sink, which writes to no
	// buffer and ends no output). When it also implements inputEnder or
	// ticker, the replica calls it for those too.
	out output
}

// inputEnder is implemented by an output with work to do once the input
// has ended, before the replica ends its output: a reduce replica closes
// its windows there, so that its results precede its end of stream.
type inputEnder interface {
	endInput(ctx context.Context, kind EndKind) error
}

// ticker is implemented by an output with a loop to run beside the reader
// (a reduce replica closes windows as the watermark moves without data).
// It runs until ctx ends; an error fails the replica.
type ticker interface {
	tickLoop(ctx context.Context) error
}

// stagedChunk is a chunk whose writes are in flight, on its way through
// the completer.
type stagedChunk[T any] struct {
	chunk []inflight[T]
	write completion
}

// stagedWrites is how many chunks a worker keeps staged: enough for a
// flush to cover several chunks of every worker.
const stagedWrites = 4

// replica is one running replica of a map, sink or reduce vertex: a reader
// on the caller's goroutine, Options.Concurrency workers, each with a
// completer when the stage's writes are staged, and the loops beside the
// reader (idle watermarks, a reduce's ticker). Its goroutines run in one errgroup: the
// first error one of them returns cancels the group's context, which
// stops the reader, makes every worker nack what it has not handled, and
// is what the replica returns. run calls its steps in order.
type replica[T any] struct {
	cfg   Config
	in    Input[T]
	r     *reader[T]
	hard  context.Context // writes and acks; ends when the pipeline stops at once
	stop  context.Context // reads; derived from hard
	stage stage[T]

	g *errgroup.Group
	// ctx is the group's: it ends with hard or at the first error of a
	// goroutine of the replica (failure).
	ctx context.Context
	// loops is the context of the loops beside the reader; stopLoops ends
	// them once the replica has drained.
	loops     context.Context
	stopLoops context.CancelFunc

	chans []chan []inflight[T] // to the workers: one, or one per worker (chunkByKey)
	per   []*batchBuf[T]       // dispatchByKey's scratch: each worker's share of a batch
	// staged has each worker's completer, when the stage's writes are
	// staged (nil otherwise).
	staged []*completer[stagedChunk[T]]
	// running counts the workers and completers still running; the last
	// one out closes settled: every chunk dispatched is acked or nacked,
	// or left queued by a failure (abandonLeft).
	running atomic.Int32
	settled chan struct{}
}

// newReplica returns the replica's reader and state; the caller sets the
// stage before run. See replica.run for hard and stop.
func newReplica[T any](hard, stop context.Context, cfg Config, in Input[T]) *replica[T] {
	o := cfg.Options
	// User functions and sinks learn which replica calls them.
	hard = replicactx.With(hard, vertex.Replica{Vertex: cfg.Vertex, Index: cfg.Replica})
	r := newReader(in.Consumer, in.Partitions, in.Writers, o.BatchSize, o.MaxInFlight, cfg.Counters, cfg.Hooks.Fetcher)
	r.run = cfg.Run
	r.seedEnds(in.Ended)
	return &replica[T]{cfg: cfg, in: in, r: r, hard: hard, stop: stop, settled: make(chan struct{})}
}

// workers is the number of workers: Options.Concurrency.
func (rp *replica[T]) workers() int { return rp.cfg.Options.Concurrency }

// run runs the replica until its input has ended (end of stream from every
// writer on every partition it reads, and everything read acked: then it
// ends its own output, see eos.go), stop ends (it stops without ending its
// output, to be resumed later), or hard ends (the pipeline is failing). It
// returns after every goroutine it started has ended and every message is
// acked or nacked, with the replica's first failure.
func (rp *replica[T]) run() error {
	readCtx := rp.start()
	readErr := rp.r.loop(readCtx, rp.dispatch)
	if err := rp.drain(readErr); err != nil {
		return err
	}
	return rp.end()
}

// start starts the workers, their completers and the loops beside the
// reader, and returns the reader's context: it ends with stop, or when the
// replica fails.
func (rp *replica[T]) start() context.Context {
	rp.g, rp.ctx = errgroup.WithContext(rp.hard)
	rp.loops, rp.stopLoops = context.WithCancel(rp.ctx)
	n := rp.workers()
	rp.chans = make([]chan []inflight[T], 1)
	if rp.stage.mode == chunkByKey {
		rp.chans = make([]chan []inflight[T], n)
		rp.per = make([]*batchBuf[T], n)
	}
	for i := range rp.chans {
		rp.chans[i] = make(chan []inflight[T], n)
	}
	running := len(rp.stage.handlers)
	if rp.stage.stages {
		running *= 2
	}
	rp.running.Store(int32(running))
	for i, h := range rp.stage.handlers {
		ch := rp.chans[i%len(rp.chans)]
		var c *completer[stagedChunk[T]]
		if rp.stage.stages {
			// Each worker's chunks are settled in its order by its own
			// completer: a flush that covers the chunks of several
			// workers frees them all at once.
			c = newCompleter(stagedWrites, rp.settleStaged, rp.abandonStaged)
			rp.staged = append(rp.staged, c)
			rp.g.Go(func() error {
				defer rp.exit()
				return c.run()
			})
		}
		rp.g.Go(func() error { return rp.work(ch, h, c) })
	}
	// The loops run until the replica has drained.
	hooks := rp.cfg.Hooks
	if f, ok := hooks.Fetcher.(IdleFetcher); ok {
		rp.g.Go(func() error {
			rp.r.idleLoop(rp.loops, f, hooks.idleInterval(), rp.in.Consumer.Assigned())
			return nil
		})
	}
	if rp.in.Ended != nil {
		rp.g.Go(func() error {
			rp.r.endsLoop(rp.loops, rp.in.Ended, hooks.idleInterval())
			return nil
		})
	}
	if ip, ok := hooks.Publisher.(IdlePublisher); ok && rp.stage.out != nil {
		rp.g.Go(func() error { return rp.failure(rp.stage.out.idleLoop(rp.loops, ip, hooks.idleInterval())) })
	}
	if t, ok := rp.stage.out.(ticker); ok {
		rp.g.Go(func() error { return rp.failure(t.tickLoop(rp.loops)) })
	}
	readCtx, cancel := context.WithCancel(rp.stop)
	context.AfterFunc(rp.ctx, cancel)
	return readCtx
}

// failure is err as the replica reports it (named by vertex and replica),
// or nil when err is none or a consequence: the replica was failing
// already, or hard had ended.
func (rp *replica[T]) failure(err error) error {
	if err == nil || rp.ctx.Err() != nil {
		return nil
	}
	return asProcessError(rp.cfg, err)
}

// work is a worker: it runs h on every chunk of ch until ch is closed, and
// acks each chunk once handled, or hands it to its completer c with the
// writes h left in flight. Once the replica fails it nacks what it gets.
// It returns h's first error at once.
func (rp *replica[T]) work(ch <-chan []inflight[T], h handler[T], c *completer[stagedChunk[T]]) error {
	defer rp.exit()
	if c != nil {
		defer c.close() // no more submissions: the completer returns once it settled them
	}
	for chunk := range ch {
		if rp.ctx.Err() != nil {
			rp.r.nack(chunk)
			continue
		}
		write, err := h(rp.ctx, chunk)
		switch {
		case err != nil:
			rp.r.nack(chunk)
			return rp.failure(err)
		case write == nil:
			rp.r.ack(chunk)
		case c == nil:
			if err := rp.settleStaged(stagedChunk[T]{chunk, write}); err != nil {
				return err
			}
		default:
			c.submit(rp.ctx, stagedChunk[T]{chunk, write})
		}
	}
	return nil
}

// exit is the last act of a worker or a completer: the last one out
// closes settled.
func (rp *replica[T]) exit() {
	if rp.running.Add(-1) == 0 {
		close(rp.settled)
	}
}

// settleStaged acks a staged chunk once its writes complete; after a
// failure, or once hard ended, it nacks it.
func (rp *replica[T]) settleStaged(s stagedChunk[T]) error {
	if err := s.write.complete(); err != nil {
		rp.r.nack(s.chunk)
		return rp.failure(err)
	}
	if rp.ctx.Err() != nil {
		rp.r.nack(s.chunk)
		return nil
	}
	rp.r.ack(s.chunk)
	return nil
}

// abandonStaged nacks a staged chunk the replica gives up. Its writes are
// completed all the same: that returns the handler's buffers, and what it
// publishes is at most read again.
func (rp *replica[T]) abandonStaged(s stagedChunk[T]) {
	_ = s.write.complete()
	rp.r.nack(s.chunk)
}

// drain stops the replica once the reader returned readErr, in order, and
// returns its first failure.
func (rp *replica[T]) drain(readErr error) error {
	// 1. No more chunks: the workers finish the ones they hold and return.
	for _, ch := range rp.chans {
		close(ch)
	}
	// 2. Wait for the workers and their completers: every chunk handed on
	//    is acked or nacked, but for what a failure left queued.
	<-rp.settled
	// 3. Nack what a failure left queued: chunks no worker took, staged
	//    chunks the completer did not settle.
	rp.abandonLeft()
	// 4. The input ended and nothing failed: the stage's last work (a
	//    reduce closes its windows), before the end of stream.
	var endErr error
	if e, ok := rp.stage.out.(inputEnder); ok && rp.r.ended() && readErr == nil && rp.ctx.Err() == nil {
		endErr = e.endInput(rp.ctx, rp.r.ends.Kind())
	}
	// 5. Wait until every permit is back, and commit what was acked.
	drainErr := rp.r.drain()
	if errors.Is(drainErr, isb.ErrClosed) {
		drainErr = nil
	}
	// 6. Stop the loops beside the reader, and wait for them: no idle
	//    control message follows the end of stream.
	rp.stopLoops()
	gErr := rp.g.Wait()
	// 7. The first failure: the reader's own, a goroutine's (which
	//    stopped the others), the last work's, the drain's.
	for _, err := range []error{readErr, gErr, endErr, drainErr} {
		if err != nil {
			return asProcessError(rp.cfg, err)
		}
	}
	return nil
}

// abandonLeft nacks the chunks left in the workers' channels and in the
// completer's queue after a failure. It runs once every worker returned
// and the channels are closed.
func (rp *replica[T]) abandonLeft() {
	for _, ch := range rp.chans {
		for chunk := range ch {
			rp.r.nack(chunk)
		}
	}
	for _, c := range rp.staged {
		c.abandonRest()
	}
}

// end ends the replica's output once its input has ended: everything read
// is acked, so everything written is written.
func (rp *replica[T]) end() error {
	if !rp.r.ended() || rp.stage.out == nil || rp.hard.Err() != nil {
		return nil
	}
	if err := rp.stage.out.WriteEnd(rp.hard, rp.cfg.Processor(), rp.r.ends.Kind()); err != nil && rp.hard.Err() == nil {
		return asProcessError(rp.cfg, err)
	}
	return nil
}
