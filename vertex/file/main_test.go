package file_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/runnel-dev/runnel/internal/crashtest"
)

func TestMain(m *testing.M) {
	// The crash tests re-execute this binary as their child.
	if crashtest.RunChild(children) {
		return
	}
	goleak.VerifyTestMain(m)
}
