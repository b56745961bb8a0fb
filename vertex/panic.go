package vertex

import "fmt"

// PanicError is the error a user function, source or sink returns in
// place of a panic. The runtime recovers every panic of user code, so that
// it never takes the host process down: the panic becomes an error of the
// message (or batch) being processed, to which the vertex's [RetryPolicy]
// applies as to any other error. errors.Is(err, ErrPanic) matches it, and
// errors.As finds the value passed to panic when it was an error.
type PanicError struct {
	// Value is what was passed to panic.
	Value any
	// Stack is the stack of the panicking goroutine (runtime/debug.Stack),
	// which names the user function that panicked.
	Stack []byte
}

// Error returns the panic value; the stack is in the Stack field.
func (e *PanicError) Error() string { return fmt.Sprintf("vertex: user code panicked: %v", e.Value) }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Is makes errors.Is(err, ErrPanic) true.
func (e *PanicError) Is(target error) bool { return target == ErrPanic }
