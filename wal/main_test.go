package wal

import (
	"os"
	"testing"

	"github.com/runnel-dev/runnel/internal/crashtest"
	"go.uber.org/goleak"
)

// TestMain runs a child process's part when the binary was re-executed for
// a multi-process test, else the tests, checking that every WAL's committer
// goroutine was stopped.
func TestMain(m *testing.M) {
	if crashtest.RunChild(children) {
		return
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		for _, d := range []string{bigDir, templateDir} {
			if d != "" {
				os.RemoveAll(d)
			}
		}
		os.Exit(code)
	}))
}
