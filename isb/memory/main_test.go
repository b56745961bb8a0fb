package memory_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The topics under test run push-consumer goroutines; every one must be
// stopped by the time a test returns.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
