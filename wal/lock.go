package wal

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// lockDir takes an exclusive, non-blocking flock on dir. flock belongs to
// the open file description, so a second Open of the same directory fails
// in this process as well as in another; the kernel drops the lock when the
// process dies, so a crash never leaves a stale lock.
func lockDir(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("wal: open directory for locking: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("wal: lock %s: %w", dir, err)
	}
	return f, nil
}
