package wal

import (
	"fmt"
	"os"
)

const childEnv = "WAL_TEST_CHILD"

// runChild runs the child side of a multi-process test when this binary
// was re-executed for one, and reports whether it did.
func runChild() bool {
	switch os.Getenv(childEnv) {
	case "":
		return false
	case "lock":
		lockChild()
	case "crash":
		crashChild()
	case "reopen":
		reopenChild()
	default:
		fmt.Fprintln(os.Stderr, "unknown child", os.Getenv(childEnv))
		os.Exit(2)
	}
	return true
}
