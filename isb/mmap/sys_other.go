//go:build !linux && !darwin

package mmap

import (
	"fmt"
	"os"
	"runtime"
)

// The mmap storage needs flock, mmap, fdatasync and holes in files, as
// Linux and macOS have them. On other systems lockFile, the first call of
// Open, fails with ErrUnsupported, so nothing else here is ever reached.

func unsupported() error {
	return fmt.Errorf("%w: memory-mapped storage runs on linux and darwin, not %s", ErrUnsupported, runtime.GOOS)
}

func lockFile(*os.File) error                 { return unsupported() }
func mapFile(*os.File, int64) ([]byte, error) { return nil, unsupported() }
func unmapFile([]byte)                        {}

func seekHole(*os.File, int64) (int64, error) { return 0, unsupported() }
func fdatasync(*os.File) error                { return unsupported() }
func punchHole(*os.File, int64, int64) error  { return unsupported() }
