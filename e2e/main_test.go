// Package e2e runs whole pipelines and checks what reaches the sinks
// against an oracle: every message counted per ID, no loss, no duplicate.
package e2e

import (
	"testing"

	"github.com/runnel-dev/runnel/internal/crashtest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// A crash test re-executes this binary as its child (see child_test.go).
	if crashtest.RunChild(children) {
		return
	}
	goleak.VerifyTestMain(m)
}
