package fsutil

import (
	"os"

	"golang.org/x/sys/unix"
)

// Fdatasync flushes f's data, and the metadata needed to read it back, to
// the disk.
func Fdatasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
