package jsstorage_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests: not the buffers',
// not the watermark watches', not the NATS client's or the embedded
// server's.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
