package fsutil

import (
	"errors"
	"fmt"
	"os"
)

// ErrWouldBlock is LockDir's error when another open file description
// holds the lock.
var ErrWouldBlock = errors.New("lock held")

// LockDir takes an exclusive, non-blocking lock (flock) on dir and returns
// the open directory that holds it; closing it releases the lock. flock
// belongs to the open file description, so a second LockDir of the same
// directory fails in this process as well as in another; the kernel drops
// the lock when the process dies, so a crash never leaves a stale lock.
// The error matches ErrWouldBlock when the lock is held, and
// errors.ErrUnsupported on a system other than Linux and macOS.
func LockDir(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open directory for locking: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, ErrWouldBlock) {
			return nil, err
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return f, nil
}
