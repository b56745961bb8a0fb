package vertex

import (
	"context"
	"fmt"
)

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
// batch was delivered: every message is retried, the error its cause; but a
// [*WriteError] says which messages failed and why, and the results stand. Replicas of a sink vertex
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

// WriteError is the error a Sink's Write returns beside its results to
// say why messages were not delivered: Causes[i] is the cause for msgs[i].
// Unlike any other error (which means nothing of the batch was delivered),
// a *WriteError leaves the results standing: a message is retried when its
// result is ResultRetry, or, with nil results, when it has a cause; the
// others are delivered (or go to the fallback, as results say). Causes may
// be shorter than msgs (the rest have none), never longer.
//
// The cause of a message whose retries are used up is in the error that
// fails the pipeline (errors.Is and errors.As reach it through the
// *ProcessError) and in the log line of a retried or dropped message; a
// message without a cause gets "sink answered retry". A Write that returns
// the *WriteError wrapped (fmt.Errorf("...: %w", we)) is read the same.
//
// Why an error and not a third return value or a richer Result: every Sink
// written so far compiles and behaves as before, a sink that fails as a
// whole keeps returning its plain error, and one that delivers part of a
// batch states its causes where Go code states failures.
type WriteError struct {
	Causes []error
}

// Error says how many messages failed and the first cause.
func (e *WriteError) Error() string {
	n, first := 0, error(nil)
	for _, c := range e.Causes {
		if c != nil {
			if n++; first == nil {
				first = c
			}
		}
	}
	if first == nil {
		return "vertex: sink write failed in part"
	}
	if n == 1 {
		return fmt.Sprintf("vertex: sink write failed for 1 message: %v", first)
	}
	return fmt.Sprintf("vertex: sink write failed for %d messages, first: %v", n, first)
}

// Unwrap returns the causes, so errors.Is and errors.As look into each.
func (e *WriteError) Unwrap() []error {
	var out []error
	for _, c := range e.Causes {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}
