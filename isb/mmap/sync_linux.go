package mmap

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync flushes f's data, and the metadata needed to read it back, to
// the disk.
func fdatasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

// punchHole deallocates n bytes of f from off, keeping f's size; it
// returns errors.ErrUnsupported where the file system cannot punch holes.
func punchHole(f *os.File, off, n int64) error {
	err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return errors.ErrUnsupported
	}
	return err
}
