package e2e

import (
	"os"

	"github.com/runnel-dev/runnel/internal/crashtest"
)

// children are the child sides of the crash tests: a test binary that
// internal/crashtest re-executed runs one of them instead of the tests
// (see TestMain), and exits with its code.
var children = map[string]func(){
	"crash":        func() { os.Exit(crashChild()) },
	"reduce-crash": func() { os.Exit(reduceCrashChild()) },
}

// childFail reports a child's failure to the parent (an "E" line on
// stdout, which the parent turns into a test failure) and returns the
// child's exit code.
func childFail(format string, args ...any) int {
	crashtest.Printf("E "+format, args...)
	return 1
}
