package mmap

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// punchHole deallocates n bytes of f from off, keeping f's size; it
// returns errors.ErrUnsupported where the file system cannot punch holes.
func punchHole(f *os.File, off, n int64) error {
	err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return errors.ErrUnsupported
	}
	return err
}
