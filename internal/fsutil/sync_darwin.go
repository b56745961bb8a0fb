package fsutil

import (
	"os"

	"golang.org/x/sys/unix"
)

// Fdatasync flushes f's data to the disk. macOS has no fdatasync, and its
// fsync leaves the data in the drive's cache: F_FULLFSYNC asks the drive
// to write it out, as fdatasync does on Linux. File systems that refuse
// F_FULLFSYNC (some network ones) get fsync.
func Fdatasync(f *os.File) error {
	if _, err := unix.FcntlInt(f.Fd(), unix.F_FULLFSYNC, 0); err == nil {
		return nil
	}
	return unix.Fsync(int(f.Fd()))
}
