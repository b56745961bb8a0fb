package mmap

import (
	"errors"
	"fmt"
	"os"
)

// errWouldBlock is lockFile's error when another open file description
// holds the lock.
var errWouldBlock = errors.New("mmap: lock held")

// lockDir takes an exclusive, non-blocking flock on dir. flock belongs to
// the open file description, so a second open of the same topic fails in
// this process as well as in another one; the kernel drops the lock when
// the process dies, so a crash never leaves a stale lock.
func lockDir(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("mmap: open topic directory for locking: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, fmt.Errorf("%w: %s is open in another topic (this or another process)", ErrLocked, dir)
		}
		return nil, fmt.Errorf("mmap: lock %s: %w", dir, err) // ErrUnsupported off linux and darwin
	}
	return f, nil
}

// unlockDir releases the lock taken by lockDir.
func unlockDir(f *os.File) error {
	// Closing the descriptor releases the flock.
	if err := f.Close(); err != nil {
		return fmt.Errorf("mmap: unlock %s: %w", f.Name(), err)
	}
	return nil
}
