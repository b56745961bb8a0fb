package forwarder

import (
	"runtime/debug"

	"github.com/runnel-dev/runnel/vertex"
)

// recoverPanic, deferred directly by a function that calls user code, turns
// a panic of that call into a *vertex.PanicError stored in *err (the
// deferring function's named error result):
//
//	func call(f func() error) (err error) {
//		defer recoverPanic(&err)
//		return f()
//	}
//
// It costs a deferred call when nothing panics. It must be deferred itself,
// not called from a deferred closure: recover stops a panic only when
// called by the deferred function.
func recoverPanic(err *error) {
	if v := recover(); v != nil {
		*err = &vertex.PanicError{Value: v, Stack: debug.Stack()}
	}
}
