package file

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync flushes f's data and size to the disk. It runs inside
// f's RawConn.Control, which holds f open for the call: a rotation may
// close f while another Write flushes it, and the descriptor must not be
// closed (and reused by another open) under fdatasync; a call that comes
// after the close fails instead.
func fdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fdatasync(int(fd)) }); err != nil {
		return err
	}
	return serr
}
