package forwarder

import (
	"errors"
	"fmt"
)

// Sentinel errors of package forwarder, matched with errors.Is.
var (
	// ErrRetriesExhausted is matched by a *ProcessError whose retries ran
	// out under the FailPipeline policy.
	ErrRetriesExhausted = errors.New("forwarder: retries exhausted")
	// ErrNoFallback is returned when a sink asks for its fallback and the
	// vertex has none.
	ErrNoFallback = errors.New("forwarder: no fallback sink")
	// ErrNoSuchEdge is returned by Writer.WriteControl for a destination
	// or partition the writer does not write to.
	ErrNoSuchEdge = errors.New("forwarder: no such edge")
	// ErrReservedTag is returned by Writer.Write for a message carrying
	// ControlTag: readers would skip it as a control message, losing it.
	ErrReservedTag = errors.New("forwarder: message carries a reserved tag")
)

// ProcessError reports a failure of one replica: a UDF, a sink, a source,
// or the buffers, with the message it concerns when there is one.
type ProcessError struct {
	Vertex    string
	Replica   int
	MessageID string // empty when the error concerns no single message
	Attempts  int    // attempts made, 0 when not retried
	Err       error
}

func (e *ProcessError) Error() string {
	s := fmt.Sprintf("forwarder: vertex %q replica %d", e.Vertex, e.Replica)
	if e.MessageID != "" {
		s += fmt.Sprintf(" message %q", e.MessageID)
	}
	if e.Attempts > 0 {
		s += fmt.Sprintf(" after %d attempts", e.Attempts)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *ProcessError) Unwrap() error { return e.Err }
