package forwarder

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/vertex"
)

// RunSink runs one replica of a sink vertex. Each chunk goes to sink in one
// Write; messages it answers ResultRetry (or all of them, on an error other
// than a *vertex.WriteError) are written again after a backoff, each with
// its cause (the error, or the WriteError's cause for it) for the log and
// for the error of exhausted retries; those it answers ResultFallback, and those
// whose retries are used up under the ToFallback policy, go to fallback
// (which may be nil when neither can happen). A chunk is acked when every
// message is delivered, dropped, or delivered to the fallback.
func RunSink[T any](hard, stop context.Context, cfg Config, in Input[T], sink, fallback vertex.Sink[T]) error {
	cfg = cfg.withFailures()
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
	causes          []error             // of retry's messages, nil where the sink gave none
	// fbCause is why the first message of fb went there: the sink's cause
	// for it (a *vertex.WriteError's) or its last retry's, nil when none
	// was given. Without a fallback sink it is the failure's cause.
	fbCause error
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
	sw.fb, sw.fbCause = sw.fb[:0], nil
	if err := sw.deliver(ctx, sw.msgs); err != nil {
		return nil, err
	}
	clear(sw.retry)
	clear(sw.causes)
	if len(sw.fb) > 0 {
		defer clear(sw.fb)
		return nil, writeFallback(ctx, sw.cfg, sw.fallback, sw.fb, sw.fbCause)
	}
	return nil, nil
}

// errSinkAnsweredRetry is the cause of a message the sink answered
// ResultRetry without saying why (see vertex.WriteError).
var errSinkAnsweredRetry = fmt.Errorf("sink answered %s", vertex.ResultRetry)

// deliver writes pending to the sink until every message is delivered,
// dropped, or in sw.fb for the fallback.
func (sw *sinkWorker[T]) deliver(ctx context.Context, pending []vertex.Message[T]) error {
	cfg := sw.cfg
	for attempt := 1; ; attempt++ {
		res, err := sw.sink.Write(ctx, pending)
		if err := sw.sort(pending, res, err); err != nil {
			return err
		}
		if len(sw.retry) == 0 {
			if attempt > 1 {
				cfg.Failures.recovered(cfg.Logger, "sink write succeeded after failures")
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if attempt >= cfg.Options.Retry.MaxAttempts {
			if cfg.Options.Retry.OnExhausted == vertex.ToFallback {
				if len(sw.fb) == 0 {
					sw.fbCause = fmt.Errorf("%w: %w", vertex.ErrRetriesExhausted, sw.causes[0])
				}
				sw.fb = append(sw.fb, sw.retry...)
				return nil
			}
			for i, m := range sw.retry {
				err := fmt.Errorf("%w: %w", vertex.ErrRetriesExhausted, sw.causes[i])
				if err := exhausted(ctx, cfg, m.ID, attempt, err); err != nil {
					return err
				}
			}
			return nil
		}
		cfg.Counters.retried.Add(int64(len(sw.retry)))
		cfg.Counters.NoteError(sw.causes[0])
		wait := backoff(cfg.Options.Retry, attempt)
		cfg.Failures.failed(cfg.Logger, "sink write failed, retrying", zap.Error(sw.causes[0]),
			zap.Int("messages", len(sw.retry)), zap.String("id", sw.retry[0].ID),
			zap.Int("attempt", attempt), zap.Duration("backoff", wait))
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		// retry is rebuilt from pending on the next attempt, so pending
		// needs its own copy.
		pending = append(pending[:0:0], sw.retry...)
	}
}

// sort reads a Write's answer for pending: the delivered messages are
// counted, those to retry go to sw.retry with their causes in sw.causes,
// those for the fallback to sw.fb. A wrong count of results or causes is
// the error that fails the replica.
func (sw *sinkWorker[T]) sort(pending []vertex.Message[T], res []vertex.Result, err error) error {
	cfg := sw.cfg
	var we *vertex.WriteError
	if err != nil && errors.As(err, &we) {
		err = nil // the results stand, and the causes say why
		if len(we.Causes) > len(pending) {
			return &vertex.ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica,
				Err: fmt.Errorf("%w: sink returned %d causes for %d messages", vertex.ErrResultCount, len(we.Causes), len(pending))}
		}
	}
	if err == nil && res != nil && len(res) != len(pending) {
		return &vertex.ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica,
			Err: fmt.Errorf("%w: sink returned %d results for %d messages", vertex.ErrResultCount, len(res), len(pending))}
	}
	cause := func(i int) error {
		if we != nil && i < len(we.Causes) && we.Causes[i] != nil {
			return we.Causes[i]
		}
		return errSinkAnsweredRetry
	}
	sw.retry, sw.causes = sw.retry[:0], sw.causes[:0]
	delivered := 0
	switch {
	case err != nil:
		sw.retry = append(sw.retry, pending...)
		for range pending {
			sw.causes = append(sw.causes, err)
		}
	case res == nil && we == nil:
		delivered = len(pending)
	case res == nil: // a WriteError alone: a message with a cause failed
		for i := range pending {
			if i < len(we.Causes) && we.Causes[i] != nil {
				sw.retry, sw.causes = append(sw.retry, pending[i]), append(sw.causes, we.Causes[i])
			} else {
				delivered++
			}
		}
	default:
		for i, r := range res {
			switch r {
			case vertex.ResultOK:
				delivered++
			case vertex.ResultFallback:
				if len(sw.fb) == 0 && we != nil && i < len(we.Causes) {
					sw.fbCause = we.Causes[i]
				}
				sw.fb = append(sw.fb, pending[i])
			default:
				sw.retry, sw.causes = append(sw.retry, pending[i]), append(sw.causes, cause(i))
			}
		}
	}
	cfg.Counters.written.Add(int64(delivered))
	return nil
}

// writeFallback delivers msgs to the fallback sink with the vertex's retry
// policy; failing that, the pipeline fails (the fallback is the last resort).
// Without a fallback sink the pipeline fails with ErrNoFallback and cause,
// why the sink refused msgs[0], when it said (an HTTP sink's 400).
func writeFallback[T any](ctx context.Context, cfg Config, fallback vertex.Sink[T], msgs []vertex.Message[T], cause error) error {
	if fallback == nil {
		err := ErrNoFallback
		if cause != nil {
			err = fmt.Errorf("%w: %w", ErrNoFallback, cause)
		}
		return &vertex.ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica, MessageID: msgs[0].ID, Err: err}
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
		if _, attempts, err := retryAfter(ctx, cfg, "fallback sink write", err, call); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &vertex.ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica, MessageID: msgs[0].ID, Attempts: attempts,
				Err: fmt.Errorf("fallback sink: %w", err)}
		}
	}
	cfg.Counters.fallback.Add(int64(len(msgs)))
	cfg.reportDrop(ToFallbackSink, len(msgs), zap.String("id", msgs[0].ID))
	return nil
}
