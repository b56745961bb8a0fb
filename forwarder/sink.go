package forwarder

import (
	"context"
	"fmt"

	"github.com/runnel-dev/runnel/vertex"
)

// RunSink runs one replica of a sink vertex. Each chunk goes to sink in one
// Write; messages it answers ResultRetry (or all of them, on an error) are
// written again after a backoff; those it answers ResultFallback, and those
// whose retries are used up under the ToFallback policy, go to fallback
// (which may be nil when neither can happen). A chunk is acked when every
// message is delivered, dropped, or delivered to the fallback.
func RunSink[T any](hard, stop context.Context, cfg Config, in Input[T], sink, fallback vertex.Sink[T]) error {
	rp := newReplica(hard, stop, cfg, in)
	rp.stage = stage[T]{mode: modeOf(cfg)}
	for range rp.workers() {
		sw := &sinkWorker[T]{cfg: cfg, sink: guardSink(sink), fallback: guardSink(fallback)}
		rp.stage.handlers = append(rp.stage.handlers, sw.write)
	}
	return rp.run()
}

// sinkWorker is one worker of a sink replica.
type sinkWorker[T any] struct {
	cfg             Config
	sink, fallback  vertex.Sink[T]
	msgs, retry, fb []vertex.Message[T] // write's scratch
}

// write is the worker's handler (synchronous): it delivers the chunk to
// the sink, retrying what the sink asks for, and what the sink refuses to
// the fallback.
func (sw *sinkWorker[T]) write(ctx context.Context, chunk []inflight[T]) (completion, error) {
	sw.msgs = sw.msgs[:0]
	for i := range chunk {
		sw.msgs = append(sw.msgs, chunk[i].msg)
	}
	defer clear(sw.msgs)
	sw.fb = sw.fb[:0]
	if err := sw.deliver(ctx, sw.msgs); err != nil {
		return nil, err
	}
	clear(sw.retry)
	if len(sw.fb) > 0 {
		defer clear(sw.fb)
		return nil, writeFallback(ctx, sw.cfg, sw.fallback, sw.fb)
	}
	return nil, nil
}

// deliver writes pending to the sink until every message is delivered,
// dropped, or in sw.fb for the fallback.
func (sw *sinkWorker[T]) deliver(ctx context.Context, pending []vertex.Message[T]) error {
	cfg := sw.cfg
	for attempt := 1; ; attempt++ {
		res, err := sw.sink.Write(ctx, pending)
		if err == nil && res != nil && len(res) != len(pending) {
			return &vertex.ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica,
				Err: fmt.Errorf("%w: sink returned %d results for %d messages", vertex.ErrResultCount, len(res), len(pending))}
		}
		sw.retry = sw.retry[:0]
		delivered := 0
		switch {
		case err != nil:
			sw.retry = append(sw.retry, pending...)
		case res == nil:
			delivered = len(pending)
		default:
			for i, r := range res {
				switch r {
				case vertex.ResultOK:
					delivered++
				case vertex.ResultFallback:
					sw.fb = append(sw.fb, pending[i])
				default:
					sw.retry = append(sw.retry, pending[i])
				}
			}
		}
		cfg.Counters.written.Add(int64(delivered))
		if len(sw.retry) == 0 {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if attempt >= cfg.Options.Retry.MaxAttempts {
			if err == nil {
				err = fmt.Errorf("sink answered %s", vertex.ResultRetry)
			}
			err = fmt.Errorf("%w: %w", vertex.ErrRetriesExhausted, err)
			if cfg.Options.Retry.OnExhausted == vertex.ToFallback {
				sw.fb = append(sw.fb, sw.retry...)
				return nil
			}
			for _, m := range sw.retry {
				if err := exhausted(ctx, cfg, m.ID, attempt, err); err != nil {
					return err
				}
			}
			return nil
		}
		cfg.Counters.retried.Add(int64(len(sw.retry)))
		if err != nil {
			cfg.Counters.NoteError(err)
		} else {
			cfg.Counters.NoteError(fmt.Errorf("sink answered %s for %d of %d messages", vertex.ResultRetry, len(sw.retry), len(pending)))
		}
		if err := sleep(ctx, cfg.Options.Retry.Backoff(attempt)); err != nil {
			return err
		}
		// retry is rebuilt from pending on the next attempt, so pending
		// needs its own copy.
		pending = append(pending[:0:0], sw.retry...)
	}
}

// writeFallback delivers msgs to the fallback sink with the vertex's retry
// policy; failing that, the pipeline fails (the fallback is the last resort).
func writeFallback[T any](ctx context.Context, cfg Config, fallback vertex.Sink[T], msgs []vertex.Message[T]) error {
	if fallback == nil {
		return &vertex.ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica, MessageID: msgs[0].ID, Err: ErrNoFallback}
	}
	call := func() (struct{}, error) {
		res, err := fallback.Write(ctx, msgs)
		if err != nil {
			return struct{}{}, err
		}
		if res != nil && len(res) != len(msgs) {
			// A short answer would leave messages neither delivered nor
			// retried, yet acked: fail at once, as the main sink does.
			return struct{}{}, &vertex.ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica,
				Err: fmt.Errorf("%w: fallback sink returned %d results for %d messages", vertex.ErrResultCount, len(res), len(msgs))}
		}
		for _, r := range res {
			if r != vertex.ResultOK {
				return struct{}{}, fmt.Errorf("fallback sink answered %s", r)
			}
		}
		return struct{}{}, nil
	}
	if _, err := call(); err != nil {
		if _, ok := err.(*vertex.ProcessError); ok {
			return err
		}
		if _, attempts, err := retryAfter(ctx, cfg.Options.Retry, cfg.Counters, err, call); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &vertex.ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica, MessageID: msgs[0].ID, Attempts: attempts,
				Err: fmt.Errorf("fallback sink: %w", err)}
		}
	}
	cfg.Counters.fallback.Add(int64(len(msgs)))
	return nil
}
