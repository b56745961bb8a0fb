//go:build !linux && !darwin

package mmap

import (
	"io/fs"
	"os"
)

// The mmap storage needs flock, mmap, fdatasync and holes in files, as
// Linux and macOS have them. On other systems the lock, the first step of
// Open, fails with ErrUnsupported, so nothing else here is ever reached.

func mapFile(*os.File, int64) ([]byte, error) { return nil, errNotHere }
func unmapFile([]byte)                        {}

func seekHole(*os.File, int64) (int64, error) { return 0, errNotHere }
func punchHole(*os.File, int64, int64) error  { return errNotHere }
func allocated(fs.FileInfo) int64             { return -1 }
