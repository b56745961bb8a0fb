package vertex

import "context"

// MapFunc turns one input message into any number of outputs (none drops
// it). It may be called concurrently, up to the vertex's [Concurrency]. A
// returned error is retried as the vertex's [RetryPolicy] says.
type MapFunc[In, Out any] func(ctx context.Context, m Message[In]) ([]Message[Out], error)

// MapStreamFunc emits the outputs of one input as they are produced: each
// emit writes its message downstream before returning. emit is valid only
// until the function returns, and is not safe for concurrent use (it
// reuses one write buffer): call it from one goroutine. The input is acked
// when the function returns nil. A retried call emits again, so outputs
// emitted before a failure may be delivered twice (at-least-once).
type MapStreamFunc[In, Out any] func(ctx context.Context, m Message[In], emit func(Message[Out]) error) error

// BatchMapFunc is called once per read batch. It returns, for each input
// in order, that input's outputs: len(result) must equal len(ms), else the
// call fails with [ErrResultCount]. The ms slice is reused after the call
// returns: keep the messages, not the slice.
type BatchMapFunc[In, Out any] func(ctx context.Context, ms []Message[In]) ([][]Message[Out], error)
