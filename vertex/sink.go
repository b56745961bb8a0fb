package vertex

import "context"

// Result is a sink's verdict on one message.
type Result uint8

const (
	// ResultOK: the message is delivered; it is acked.
	ResultOK Result = iota
	// ResultRetry: delivery failed transiently; the message is written again
	// after a backoff, as the vertex's [RetryPolicy] says.
	ResultRetry
	// ResultFallback: the message cannot be delivered here; it goes to the sink
	// vertex's fallback sink.
	ResultFallback
)

// String returns "ok", "retry" or "fallback".
func (r Result) String() string {
	switch r {
	case ResultOK:
		return "ok"
	case ResultRetry:
		return "retry"
	case ResultFallback:
		return "fallback"
	}
	return "Result(?)"
}

// Sink delivers messages out of the pipeline.
//
// Write receives a batch and returns a result per message, in order (a nil
// slice means every message is ResultOK). A non-nil error means nothing of the
// batch was delivered: every message is retried. Replicas of a sink vertex
// call Write concurrently. The msgs slice is reused after Write returns:
// keep the messages, not the slice. A Sink that also implements io.Closer is closed
// once after the pipeline stops.
type Sink[T any] interface {
	Write(ctx context.Context, msgs []Message[T]) ([]Result, error)
}

// SinkFunc adapts a function to [Sink].
type SinkFunc[T any] func(ctx context.Context, msgs []Message[T]) ([]Result, error)

// Write calls f.
func (f SinkFunc[T]) Write(ctx context.Context, msgs []Message[T]) ([]Result, error) {
	return f(ctx, msgs)
}

// Validate reports a nil function, which would panic at the first Write.
func (f SinkFunc[T]) Validate() error {
	if f == nil {
		return optionError("SinkFunc", nil, "needs a non-nil function")
	}
	return nil
}
