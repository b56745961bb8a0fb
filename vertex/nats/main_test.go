package nats

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests: not the source's
// subscription, not the NATS client's, not the embedded server's.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitFor polls cond every 10ms until it holds or timeout passes, and
// fails the test then, saying what.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
