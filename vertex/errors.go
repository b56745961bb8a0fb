package vertex

import (
	"errors"
	"fmt"

	"github.com/runnel-dev/runnel/isb"
)

// Sentinel errors of package vertex, matched with errors.Is.
var (
	// ErrInvalidCondition is matched by every *ConditionError.
	ErrInvalidCondition = errors.New("vertex: invalid tag condition")
	// ErrResultCount is returned when a sink or batch-map function returns a
	// number of results different from the number of messages it was given.
	ErrResultCount = errors.New("vertex: result count does not match message count")
	// ErrPanic is matched by every *PanicError: user code panicked.
	ErrPanic = errors.New("vertex: user code panicked")
	// ErrRetriesExhausted is matched by the *ProcessError of a message
	// whose attempts ([RetryPolicy].MaxAttempts) were used up under
	// [FailPipeline].
	ErrRetriesExhausted = errors.New("vertex: retries exhausted")
)

// ProcessError is the error pipeline.Run returns when a replica fails: a
// function, source or sink of the vertex, or its buffers, failed, on the
// message with MessageID when the failure concerns one. It wraps the cause,
// so errors.Is(err, ErrRetriesExhausted) tells that the retry policy gave
// up (the cause then wraps the last error too), and errors.As finds a
// *PanicError.
type ProcessError struct {
	Vertex    string
	Replica   int
	MessageID string // empty when the error concerns no single message
	Attempts  int    // attempts made, 0 when not retried
	Err       error
}

func (e *ProcessError) Error() string {
	s := fmt.Sprintf("vertex %q replica %d", e.Vertex, e.Replica)
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

// OptionError is isb.OptionError, runnel's one option error: a vertex
// option that failed validation, named with Package "vertex". It matches
// pipeline.ErrInvalidOption (isb.ErrInvalidOption), as the option errors
// of every runnel package do.
type OptionError = isb.OptionError

// optionError is a vertex option that failed validation.
func optionError(option string, value any, reason string) *OptionError {
	return &OptionError{Package: "vertex", Option: option, Value: value, Reason: reason}
}

// ConditionError reports a tag condition that cannot work as written.
type ConditionError struct {
	Condition string
	Reason    string
}

func (e *ConditionError) Error() string {
	return fmt.Sprintf("vertex: condition %s: %s", e.Condition, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidCondition) true.
func (e *ConditionError) Is(target error) bool { return target == ErrInvalidCondition }
