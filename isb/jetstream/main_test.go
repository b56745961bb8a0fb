package jetstream_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests: not the backend's,
// not the NATS client's, not the embedded server's.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
