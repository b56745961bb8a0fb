package vertex

import (
	"context"
	"sync/atomic"

	"go.uber.org/zap"
)

// BlackholeSink is the [Sink] returned by [Blackhole].
type BlackholeSink[T any] struct{ n atomic.Int64 }

// Blackhole returns a sink that discards every message and counts them.
func Blackhole[T any]() *BlackholeSink[T] { return &BlackholeSink[T]{} }

// Write counts msgs.
func (b *BlackholeSink[T]) Write(_ context.Context, msgs []Message[T]) ([]Result, error) {
	b.n.Add(int64(len(msgs)))
	return nil, nil
}

// Count returns how many messages the sink received.
func (b *BlackholeSink[T]) Count() int64 { return b.n.Load() }

// Func returns a sink calling f with each batch; an error retries the
// whole batch. f is called concurrently by the vertex's replicas and
// concurrency. A nil f fails validation.
func Func[T any](f func(ctx context.Context, msgs []Message[T]) error) Sink[T] {
	if f == nil {
		return SinkFunc[T](nil)
	}
	return SinkFunc[T](func(ctx context.Context, msgs []Message[T]) ([]Result, error) {
		return nil, f(ctx, msgs)
	})
}

// ToChannel returns a sink that sends every message to ch, waiting for the
// receiver (or the pipeline's stop). A nil ch fails validation: every send
// would block until the pipeline's drain timeout.
func ToChannel[T any](ch chan<- Message[T]) Sink[T] {
	if ch == nil {
		return badSink[T]{optionError("ToChannel", nil, "needs a non-nil channel")}
	}
	return SinkFunc[T](func(ctx context.Context, msgs []Message[T]) ([]Result, error) {
		for i, m := range msgs {
			select {
			case ch <- m:
			case <-ctx.Done():
				// The sent ones are delivered; retry only the rest.
				res := make([]Result, len(msgs))
				for j := i; j < len(res); j++ {
					res[j] = ResultRetry
				}
				return res, nil
			}
		}
		return nil, nil
	})
}

// Log returns a sink that logs every message at info level on logger (a
// nil logger logs nothing).
func Log[T any](logger *zap.Logger) Sink[T] {
	if logger == nil {
		logger = zap.NewNop()
	}
	return SinkFunc[T](func(_ context.Context, msgs []Message[T]) ([]Result, error) {
		for _, m := range msgs {
			logger.Info("message", zap.String("id", m.ID), zap.Strings("keys", m.Keys),
				zap.Strings("tags", m.Tags), zap.Time("event_time", m.EventTime), zap.Any("value", m.Value))
		}
		return nil, nil
	})
}

// badSink is a sink built from a bad argument: it fails validation (and
// every Write, should it be used without) with err.
type badSink[T any] struct{ err error }

func (b badSink[T]) Write(context.Context, []Message[T]) ([]Result, error) { return nil, b.err }

func (b badSink[T]) Validate() error { return b.err }
