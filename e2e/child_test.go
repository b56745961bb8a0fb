package e2e

import (
	"fmt"
	"os"
)

const childEnv = "RUNNEL_E2E_CHILD"

// runChild runs the child side of a multi-process test when this binary
// was re-executed for one, and reports whether it did. The child exits.
func runChild() bool {
	switch os.Getenv(childEnv) {
	case "":
		return false
	case "crash":
		os.Exit(crashChild())
	case "reduce-crash":
		os.Exit(reduceCrashChild())
	default:
		fmt.Fprintln(os.Stderr, "unknown child", os.Getenv(childEnv))
		os.Exit(2)
	}
	return true
}

// childFail reports a child's failure to the parent (an "E" line on
// stdout, which the parent turns into a test failure) and returns the
// child's exit code.
func childFail(format string, args ...any) int {
	fmt.Fprintf(os.Stdout, "E "+format+"\n", args...)
	return 1
}
