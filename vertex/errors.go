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
)

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
