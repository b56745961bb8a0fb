package forwarder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/runnel-dev/runnel/internal/replicactx"
	"github.com/runnel-dev/runnel/internal/vconfig"
	"github.com/runnel-dev/runnel/vertex"
)

// RunSource runs one replica of a source vertex: it reads batches from src
// until src is exhausted or stop ends, stamps them (event time, watermark,
// lateness), writes them to edges and then acks them to src when it is a
// vertex.Acker. Writes and acks use hard, so a batch read before stop ended
// is still delivered. The source partition the watermark hook sees is the
// replica index; a read that returns no message and no error is an idle
// read (see IdleSource), so a source that can go quiet should return an
// empty batch now and then rather than block until data comes. A
// vertex.PartitionedSource, which reads several partitions, gets a
// watermark per partition when the hook is an InputWatermarker (see
// sourceMarks). Its
// contexts come in the order of every runner (see replica.run): hard, then
// stop, derived from hard.
//
// When src is exhausted (io.EOF) the replica ends its output Final: an
// end-of-stream message on every partition of every edge, its source
// partition's watermark watermark.Max, published there (EndSource,
// EndPublisher); when stop ends first, it ends its output Stopped, so the
// vertices downstream drain and end without claiming a watermark. When hard
// ends or the source fails, it writes nothing more.
func RunSource[T any](hard, stop context.Context, cfg Config, src vertex.Source[T], edges []Edge[T]) error {
	return RunResumedSource(hard, stop, cfg, src, edges, nil)
}

// RunResumedSource is RunSource for a resumable source on durable storage:
// before the first read it writes and acknowledges what res found an
// earlier run wrote, once for all replicas (see SourceResume), and it
// registers every batch in res from its read to its acknowledgement, for
// the anchors saved with the source's position. A nil res is RunSource.
func RunResumedSource[T any](hard, stop context.Context, cfg Config, src vertex.Source[T], edges []Edge[T], res *SourceResume[T]) error {
	cfg = cfg.withFailures()
	// The source learns which replica (source partition) reads.
	id := vertex.Replica{Vertex: cfg.Vertex, Index: cfg.Replica}
	hard, stop = replicactx.With(hard, id), replicactx.With(stop, id)
	if res != nil {
		acker, ok := src.(vertex.Acker[T])
		if !ok {
			return &vertex.ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica, Err: fmt.Errorf("a resumed source must be a vertex.Acker")}
		}
		if err := res.begin(hard, cfg, edges, acker); err != nil {
			if hard.Err() != nil {
				return nil
			}
			return &vertex.ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica, Err: err}
		}
	}
	sr := newSourceReplica(hard, stop, cfg, src, edges, res)
	kind, err := sr.run()
	if err != nil || kind == 0 {
		return err
	}
	return sr.end(kind)
}

// sourceReplica is one running replica of a source vertex: the read loop
// on the caller's goroutine and, in one errgroup, the completer of its
// batches (on storage that stages writes) and the idle loop. The first
// error of a goroutine cancels the group's context, which stops the loop.
type sourceReplica[T any] struct {
	cfg      Config
	src      vertex.Source[T]
	acker    vertex.Acker[T]          // src, when it takes acknowledgements
	buffered vertex.BufferedSource[T] // src, when it reads into a buffer
	w        *Writer[T]
	marks    *sourceMarks[T]
	res      *SourceResume[T] // nil: not resumed
	batches  *sourceBatches[T]
	flying   flyingBatches[T]
	// retries says that Read and Ack errors are retried under
	// cfg.Options.Retry (see sourceRetries).
	retries bool

	hard context.Context // writes and acks: a batch read before stop is delivered
	stop context.Context // reads; derived from hard
	g    *errgroup.Group
	ctx  context.Context // the group's: ends with hard or at a goroutine's failure
	// loops is the idle loop's context; stopLoops ends it.
	loops     context.Context
	stopLoops context.CancelFunc
}

func newSourceReplica[T any](hard, stop context.Context, cfg Config, src vertex.Source[T], edges []Edge[T], res *SourceResume[T]) *sourceReplica[T] {
	sr := &sourceReplica[T]{cfg: cfg, src: src, marks: newSourceMarks(cfg, src), res: res, hard: hard, stop: stop}
	sr.acker, _ = src.(vertex.Acker[T])
	sr.buffered, _ = src.(vertex.BufferedSource[T])
	sr.retries = sourceRetries(cfg, src)
	sr.cfg.Options.Retry = retryWithDefaults(cfg.Options.Retry)
	sr.w = NewWriter(edges, cfg.Counters, cfg.Hooks.Publisher, sr.marks.watermark).reportingTo(cfg)
	readSize := 0
	if sr.buffered != nil {
		readSize = cfg.Options.BatchSize
	}
	depth := 1
	if sr.w.Stages() {
		depth = sourceStagedBatches
	}
	sr.batches = newSourceBatches(depth, readSize, sr.finish, sr.drop)
	return sr
}

// run reads, stamps, writes and acks until src is exhausted (Final), stop
// ends (Stopped), hard ends (0, nil) or something fails (the error). On
// storage that stages writes it keeps several batches in flight (see
// source_batches.go); every batch is complete (durable, acked) or dropped
// after a failure when it returns, and the idle loop has stopped.
func (sr *sourceReplica[T]) run() (EndKind, error) {
	// 1. Start the completer and the idle loop: output partitions this
	//    replica stops writing to (the source went quiet, or round-robin
	//    skips them) get idle WMBs.
	sr.g, sr.ctx = errgroup.WithContext(sr.hard)
	sr.loops, sr.stopLoops = context.WithCancel(sr.ctx)
	sr.batches.start(sr.g)
	if ip, ok := sr.cfg.Hooks.Publisher.(IdlePublisher); ok {
		sr.g.Go(func() error {
			return runIdleLoop(sr.loops, ip, sr.cfg.Hooks.idleInterval(), sr.idleWatermark, sr.w.WriteControl)
		})
	}
	// 2. Read until the end, stop, or a failure: the read ends with stop
	//    or with the group's context.
	read, cancel := context.WithCancel(sr.stop)
	context.AfterFunc(sr.ctx, cancel)
	kind, err := sr.read(read)
	// 3. Wait until every batch handed to the completer is complete, or
	//    dropped after a failure.
	sr.batches.close()
	// 4. Stop the idle loop and wait for it: no idle control message
	//    follows the end.
	sr.stopLoops()
	gErr := sr.g.Wait()
	sr.batches.abandonRest()
	// 5. The first failure: the loop's, then a goroutine's; none once hard
	//    ended.
	if err == nil {
		err = gErr
	}
	if err != nil {
		if sr.hard.Err() != nil {
			return 0, nil
		}
		return 0, asProcessError(sr.cfg, err)
	}
	return kind, nil
}

// end ends the replica's output: kind Final raises its watermark to the
// maximum first (EndSource).
func (sr *sourceReplica[T]) end(kind EndKind) error {
	cfg := sr.cfg
	if kind == Stopped && cfg.KeepOpenOnStop {
		return nil // the stream goes on when the replica is started again
	}
	if kind == Final {
		if es, ok := cfg.Hooks.Source.(EndSource); ok {
			raise(&sr.marks.wm, es.End(cfg.Replica))
		}
	}
	if err := sr.w.WriteEnd(sr.hard, cfg.Processor(), kind); err != nil && sr.hard.Err() == nil {
		return asProcessError(cfg, err)
	}
	return nil
}

// idleWatermark is the watermark the idle loop publishes on quiet
// partitions: the replica's, held at the watermark of the oldest batch
// still in flight. The replica's watermark is raised when a batch is
// stamped, before it is stored, and a staged write may be stored after
// the idle loop's control message (JetStream stores a retried part of a
// batch after later writes), so an idle WMB at the newest batch's
// watermark could sit below records with older event times.
func (sr *sourceReplica[T]) idleWatermark() time.Time {
	if wm, ok := sr.flying.oldest(); ok {
		return wm
	}
	return sr.marks.watermark()
}

// finish completes a staged batch: it waits for its writes, acks it to
// the source and counts it.
func (sr *sourceReplica[T]) finish(b *sourceBatch[T]) error {
	cfg := sr.cfg
	n := int64(len(b.msgs))
	err := sr.w.Complete(&b.out)
	sr.flying.land(b)
	if err == nil && sr.acker != nil {
		if err = guardedAck(sr.hard, sr.acker, b.msgs); err != nil && sr.retries {
			_, _, err = retryAfter(sr.hard, cfg, "source ack", err, func() (struct{}, error) {
				return struct{}{}, guardedAck(sr.hard, sr.acker, b.msgs)
			})
		}
	}
	if sr.res != nil {
		sr.res.release(cfg.Replica, b)
	}
	if err != nil {
		// Written (or staged) but not acked to the source: neither acked
		// nor in flight any more.
		cfg.Counters.inFlight.Add(-n)
		return err
	}
	cfg.Counters.acked.Add(n)
	cfg.Counters.inFlight.Add(-n)
	cfg.Counters.latency.Since(b.readAt)
	return nil
}

// drop counts a batch that is never acked (after a failure).
func (sr *sourceReplica[T]) drop(b *sourceBatch[T]) {
	sr.flying.land(b)
	sr.cfg.Counters.inFlight.Add(-int64(len(b.msgs)))
	if sr.res != nil {
		sr.res.release(sr.cfg.Replica, b)
	}
}

// read is the loop over batches: it reads with ctx (stop, or the
// group's failure). A nil error with kind 0 is hard ending, or a failure
// of a goroutine, which the group reports.
func (sr *sourceReplica[T]) read(ctx context.Context) (EndKind, error) {
	cfg := sr.cfg
	failures := 0 // Read errors in a row
	for {
		if sr.ctx.Err() != nil {
			return 0, nil
		}
		if sr.stop.Err() != nil {
			// A source that never blocks would not notice ctx by itself.
			return Stopped, nil
		}
		b := sr.batches.take(sr.ctx)
		if b == nil {
			return 0, nil // hard ended, or the completer failed: the group reports it
		}
		msgs, err := guardedRead(ctx, sr.src, sr.buffered, b.read, cfg.Options.BatchSize)
		b.msgs = msgs
		// Messages that come with an error (io.EOF, ctx's error, a failure:
		// ReadInto may return n > 0 with any of them, as io.Reader does) were
		// taken from the source all the same: they are written and acked
		// before the error is handled, or they would be lost.
		if n := len(msgs); n > 0 {
			if err := sr.write(b); err != nil {
				return 0, err
			}
		} else {
			sr.batches.put(b)
		}
		if err != nil {
			switch {
			case errors.Is(err, io.EOF):
				return Final, nil
			case sr.ctx.Err() != nil:
				return 0, nil
			case sr.stop.Err() != nil:
				return Stopped, nil
			}
			if failures++; !sr.retries {
				return 0, err
			}
			if err := sr.readFailed(ctx, failures, err); err != nil {
				return 0, err
			}
			continue
		}
		if failures > 0 {
			failures = 0
			cfg.Failures.recovered(cfg.Logger, "source read succeeded after failures")
		}
		sr.marks.idle(msgs)
	}
}

// write stamps the batch b read, stages its writes and hands it to the
// completer.
func (sr *sourceReplica[T]) write(b *sourceBatch[T]) error {
	cfg, n := sr.cfg, len(b.msgs)
	b.readAt = time.Now()
	cfg.Counters.read.Add(int64(n))
	cfg.Counters.enter(n)
	sr.flying.take(b, func() time.Time {
		sr.marks.stamp(b.msgs)
		return sr.marks.watermark()
	})
	if sr.res != nil {
		sr.res.register(cfg.Replica, b) // before its records are staged
	}
	if err := sr.w.Stage(sr.hard, b.msgs, &b.out); err != nil {
		sr.flying.land(b)
		cfg.Counters.inFlight.Add(-int64(n))
		if sr.res != nil {
			sr.res.release(cfg.Replica, b)
		}
		return err
	}
	return sr.batches.submit(b)
}

// sourceRetries says whether a source's Read and Ack errors are retried
// (under Options.Retry): when the options set a policy, or the source is a
// vertex.RetryDefaulter (NewVertexOptions gave the options its policy).
// Other sources fail the replica at their first error, as a source that
// holds its data in the process (a slice, a channel) fails for good.
func sourceRetries(cfg Config, src any) bool {
	_, ok := src.(vertex.RetryDefaulter)
	return ok || cfg.Options.Set&vconfig.Retry != 0
}

// readFailed counts and logs the failures-th Read error in a row and waits
// the policy's backoff before the next Read; it returns the error that
// fails the replica when the attempts are used up. A wait that ctx ends
// returns nil: the loop then stops as ctx says.
func (sr *sourceReplica[T]) readFailed(ctx context.Context, failures int, err error) error {
	cfg := sr.cfg
	p := cfg.Options.Retry
	if failures >= p.MaxAttempts {
		return &vertex.ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica, Attempts: failures,
			Err: fmt.Errorf("%w: %w", vertex.ErrRetriesExhausted, err)}
	}
	cfg.Counters.retried.Add(1)
	wait := backoff(p, failures)
	cfg.Failures.failed(cfg.Logger, "source read failed, retrying", zap.Error(err),
		zap.Int("attempt", failures), zap.Duration("backoff", wait))
	_ = sleep(ctx, wait)
	return nil
}
