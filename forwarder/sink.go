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
	sink, fallback = guardSink(sink), guardSink(fallback)
	return runReplica(hard, stop, cfg, in, modeOf(cfg), nil, func(*reader[T]) handler[T] {
		var msgs, retry, fb []vertex.Message[T]
		return func(ctx context.Context, chunk []inflight[T]) error {
			msgs = msgs[:0]
			for i := range chunk {
				msgs = append(msgs, chunk[i].msg)
			}
			defer clear(msgs)
			fb = fb[:0]
			pending := msgs
			for attempt := 1; ; attempt++ {
				res, err := sink.Write(ctx, pending)
				if err == nil && res != nil && len(res) != len(pending) {
					return &ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica,
						Err: fmt.Errorf("%w: sink returned %d results for %d messages", vertex.ErrResultCount, len(res), len(pending))}
				}
				retry = retry[:0]
				delivered := 0
				switch {
				case err != nil:
					retry = append(retry, pending...)
				case res == nil:
					delivered = len(pending)
				default:
					for i, r := range res {
						switch r {
						case vertex.ResultOK:
							delivered++
						case vertex.ResultFallback:
							fb = append(fb, pending[i])
						default:
							retry = append(retry, pending[i])
						}
					}
				}
				cfg.Counters.written.Add(int64(delivered))
				if len(retry) == 0 {
					break
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if attempt >= cfg.Options.Retry.MaxAttempts {
					if err == nil {
						err = fmt.Errorf("sink answered %s", vertex.ResultRetry)
					}
					err = fmt.Errorf("%w: %w", ErrRetriesExhausted, err)
					if cfg.Options.Retry.OnExhausted == vertex.ToFallback {
						fb = append(fb, retry...)
						break
					}
					for _, m := range retry {
						if err := exhausted(ctx, cfg, m.ID, attempt, err); err != nil {
							return err
						}
					}
					break
				}
				cfg.Counters.retried.Add(int64(len(retry)))
				if err := sleep(ctx, cfg.Options.Retry.Backoff(attempt)); err != nil {
					return err
				}
				// retry is rebuilt from pending on the next attempt, so
				// pending needs its own copy.
				pending = append(pending[:0:0], retry...)
			}
			clear(retry)
			if len(fb) > 0 {
				defer clear(fb)
				return writeFallback(ctx, cfg, fallback, fb)
			}
			return nil
		}
	})
}

// writeFallback delivers msgs to the fallback sink with the vertex's retry
// policy; failing that, the pipeline fails (the fallback is the last resort).
func writeFallback[T any](ctx context.Context, cfg Config, fallback vertex.Sink[T], msgs []vertex.Message[T]) error {
	if fallback == nil {
		return &ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica, MessageID: msgs[0].ID, Err: ErrNoFallback}
	}
	call := func() (struct{}, error) {
		res, err := fallback.Write(ctx, msgs)
		if err != nil {
			return struct{}{}, err
		}
		if res != nil && len(res) != len(msgs) {
			// A short answer would leave messages neither delivered nor
			// retried, yet acked: fail at once, as the main sink does.
			return struct{}{}, &ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica,
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
		if _, ok := err.(*ProcessError); ok {
			return err
		}
		if _, attempts, err := retryAfter(ctx, cfg.Options.Retry, cfg.Counters, err, call); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica, MessageID: msgs[0].ID, Attempts: attempts,
				Err: fmt.Errorf("fallback sink: %w", err)}
		}
	}
	cfg.Counters.fallback.Add(int64(len(msgs)))
	return nil
}
