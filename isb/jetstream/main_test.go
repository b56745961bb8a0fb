package jetstream_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/runnel-dev/runnel/internal/crashtest"
)

// TestMain runs a child's part when the two-process tests re-executed
// this binary (procs_child_test.go); otherwise it runs the tests and
// checks that no goroutine outlives them: not the backend's, not the NATS
// client's, not the embedded server's.
func TestMain(m *testing.M) {
	if crashtest.RunChild(children) {
		return
	}
	goleak.VerifyTestMain(m)
}
