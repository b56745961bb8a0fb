package wal

import (
	"errors"
	"fmt"
	"os"
)

// errWouldBlock is lockFile's error when another open file description
// holds the lock.
var errWouldBlock = errors.New("wal: lock held")

// lockDir takes an exclusive, non-blocking flock on dir. flock belongs to
// the open file description, so a second Open of the same directory fails
// in this process as well as in another; the kernel drops the lock when the
// process dies, so a crash never leaves a stale lock.
func lockDir(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("wal: open directory for locking: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("wal: lock %s: %w", dir, err) // ErrUnsupported off linux and darwin
	}
	return f, nil
}
