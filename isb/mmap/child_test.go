package mmap

import (
	"fmt"
	"os"
)

const childEnv = "MMAP_TEST_CHILD"

// systemChildren are the children of tests that run on one system only,
// registered by their files.
var systemChildren = map[string]func(){}

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
	default:
		if child, ok := systemChildren[os.Getenv(childEnv)]; ok {
			child()
			break
		}
		fmt.Fprintln(os.Stderr, "unknown child", os.Getenv(childEnv))
		os.Exit(2)
	}
	return true
}
