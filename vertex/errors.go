package vertex

import (
	"errors"
	"fmt"
)

// Sentinel errors of package vertex, matched with errors.Is.
var (
	// ErrInvalidOption is matched by every *OptionError.
	ErrInvalidOption = errors.New("vertex: invalid option")
	// ErrInvalidCondition is matched by every *ConditionError.
	ErrInvalidCondition = errors.New("vertex: invalid tag condition")
	// ErrResultCount is returned when a sink or batch-map function returns a
	// number of results different from the number of messages it was given.
	ErrResultCount = errors.New("vertex: result count does not match message count")
	// ErrPanic is matched by every *PanicError: user code panicked.
	ErrPanic = errors.New("vertex: user code panicked")
)

// OptionError reports a vertex option that failed validation, naming it.
type OptionError struct {
	Option string // e.g. "MaxInFlight"
	Value  any    // the rejected value
	Reason string // e.g. "must be at least BatchSize (500)"
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("vertex: option %s: %s (got %v)", e.Option, e.Reason, e.Value)
}

// Is makes errors.Is(err, ErrInvalidOption) true.
func (e *OptionError) Is(target error) bool { return target == ErrInvalidOption }

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
