package http

import (
	"testing"

	"go.uber.org/goleak"
)

// The source's server and the sink's client start goroutines: goleak
// checks that Close (and the tests' servers) end them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
