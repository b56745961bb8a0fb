package forwarder

import (
	"errors"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/vertex"
)

// TestRecoverPanic: a panic of user code becomes a *vertex.PanicError with the value
// and the stack that names the panicking function; no panic leaves the
// error as it was.
func TestRecoverPanic(t *testing.T) {
	call := func(f func() error) (err error) {
		defer recoverPanic(&err)
		return f()
	}
	want := errors.New("plain")
	if err := call(func() error { return want }); err != want {
		t.Fatalf("no panic: %v, want %v", err, want)
	}
	err := call(func() error { panicking("boom"); return nil })
	var pe *vertex.PanicError
	if !errors.As(err, &pe) || !errors.Is(err, vertex.ErrPanic) || pe.Value != "boom" {
		t.Fatalf("panic(\"boom\"): %v (%T); want a *PanicError of \"boom\" matching ErrPanic", err, err)
	}
	if !strings.Contains(string(pe.Stack), "forwarder.panicking") {
		t.Errorf("the stack does not name the panicking function:\n%s", pe.Stack)
	}
	if err.Error() != "vertex: user code panicked: boom" {
		t.Errorf("Error() = %q", err.Error())
	}
	// A panic with an error value unwraps to it; panic(nil) is recovered too.
	err = call(func() error { panic(want) })
	if !errors.Is(err, want) || !errors.Is(err, vertex.ErrPanic) {
		t.Fatalf("panic(err): %v; want it to match err and ErrPanic", err)
	}
	err = call(func() error { panic(nil) })
	if !errors.As(err, &pe) {
		t.Fatalf("panic(nil): %v; want a *vertex.PanicError", err)
	}
}

//go:noinline
func panicking(v any) { panic(v) }
