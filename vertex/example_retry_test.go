package vertex_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/runnel-dev/runnel/vertex"
)

// errTooLarge is a cause a sink gives for one message.
var errTooLarge = errors.New("payload too large")

// A sink that delivers part of a batch says why the rest failed with a
// *vertex.WriteError: the message with a cause is retried, and once its
// retries are used up the cause is in the error pipeline.Run returns.
func ExampleWriteError() {
	sink := vertex.SinkFunc[string](func(_ context.Context, msgs []vertex.Message[string]) ([]vertex.Result, error) {
		we := &vertex.WriteError{Causes: make([]error, len(msgs))}
		for i, m := range msgs {
			if len(m.Value) > 5 {
				we.Causes[i] = fmt.Errorf("message %s: %w", m.ID, errTooLarge)
			}
		}
		return nil, we // nil results: the messages without a cause are delivered
	})
	_, err := sink.Write(context.Background(), []vertex.Message[string]{{ID: "a", Value: "ok"}, {ID: "b", Value: "too long"}})
	fmt.Println(err)
	fmt.Println(errors.Is(err, errTooLarge))
	// Output:
	// vertex: sink write failed for 1 message: message b: payload too large
	// true
}

// A connector that talks to another system retries until the pipeline
// stops; a vertex that must give up sets its own policy.
func ExampleRemoteRetry() {
	p := vertex.RemoteRetry
	fmt.Println(p.MaxAttempts == vertex.UntilStopped, p.Backoff(1), p.Backoff(4), p.Backoff(10), p.Jitter)
	giveUp := vertex.Retry(vertex.RetryPolicy{MaxAttempts: 10, InitialBackoff: p.InitialBackoff, MaxBackoff: p.MaxBackoff, Jitter: p.Jitter})
	_ = giveUp // pipeline.Sink(p, "out", in, natsSink, giveUp)
	// Output:
	// true 50ms 400ms 5s 0.2
}
