package vertex

import (
	"context"
	"iter"
)

// Aggregator is the incremental form of a reduce function: each window
// (per key) keeps one accumulator, O(1) in the window's messages.
//
//   - Create returns the accumulator of a new window.
//   - Add folds one message into it and returns the result.
//   - Merge combines the accumulators of two sessions that a message
//     bridged (session windows only; nil is refused for sessions).
//   - Result turns the accumulator of a closed window into its output.
//
// The functions are called from the vertex's workers, each owning its own
// windows: one accumulator is never used by two goroutines at once. They
// must be deterministic (the reduce WAL rebuilds windows by replaying Add
// and Merge) and must not keep the message they are given beyond the call
// unless the accumulator needs it.
type Aggregator[In, Acc, Out any] struct {
	Create func() Acc
	Add    func(acc Acc, m Message[In]) Acc
	Merge  func(a, b Acc) Acc
	Result func(acc Acc) Out
}

// Validate reports a nil function (Merge only for sessions).
func (a Aggregator[In, Acc, Out]) Validate(w WindowKind) error {
	missing := ""
	switch {
	case a.Create == nil:
		missing = "Create"
	case a.Add == nil:
		missing = "Add"
	case a.Result == nil:
		missing = "Result"
	case a.Merge == nil && w == SessionWindows:
		missing = "Merge"
	}
	if missing != "" {
		return &OptionError{Option: "Aggregator." + missing, Value: nil, Reason: "must not be nil"}
	}
	return nil
}

// Counting returns an aggregator counting the messages of each window.
func Counting[T any]() Aggregator[T, int64, int64] {
	return Aggregator[T, int64, int64]{
		Create: func() int64 { return 0 },
		Add:    func(n int64, _ Message[T]) int64 { return n + 1 },
		Merge:  func(a, b int64) int64 { return a + b },
		Result: func(n int64) int64 { return n },
	}
}

// ReduceStreamFunc is the streaming form of a reduce function: it is called
// once per closed window (per key) with the window's messages, in the order
// they were added (a merged session gives the older session's first), and
// emits any number of results. emit is valid only during the call and not
// safe for concurrent use. A returned error is retried as the vertex's
// RetryPolicy says; a retried call emits again, so results emitted before a
// failure may be delivered twice (at-least-once).
//
// The window keeps its messages until it closes: memory grows with the
// window's content. Prefer an [Aggregator] when the result can be folded.
type ReduceStreamFunc[In, Out any] func(ctx context.Context, w Window, keys []string, msgs iter.Seq[Message[In]], emit func(Out) error) error

// Windowed is a reduce result: the value computed for one window and key.
// The message carrying it has event time Window.EventTime() (End - 1ms) and
// the window's keys, so a downstream reduce groups it by the same keys.
type Windowed[T any] struct {
	Window Window
	Keys   []string
	Value  T
}
