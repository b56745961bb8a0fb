package mmap

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/runnel-dev/runnel/internal/fsutil"
)

// lockDir takes an exclusive, non-blocking flock on dir (fsutil.LockDir).
// flock belongs to the open file description, so a second open of the
// same topic fails in this process as well as in another one; the kernel
// drops the lock when the process dies, so a crash never leaves a stale
// lock.
func lockDir(dir string) (*os.File, error) {
	f, err := fsutil.LockDir(dir)
	switch {
	case err == nil:
		return f, nil
	case errors.Is(err, fsutil.ErrWouldBlock):
		return nil, fmt.Errorf("%w: %s is open in another topic (this or another process)", ErrLocked, dir)
	case errors.Is(err, errors.ErrUnsupported):
		return nil, fmt.Errorf("mmap: lock %s: %w", dir, unsupported()) // off linux and darwin
	}
	return nil, fmt.Errorf("mmap: %w", err)
}

// unsupported is the error of Open off Linux and macOS.
func unsupported() error {
	return fmt.Errorf("%w: memory-mapped storage runs on linux and darwin, not %s", ErrUnsupported, runtime.GOOS)
}

// unlockDir releases the lock taken by lockDir.
func unlockDir(f *os.File) error {
	// Closing the descriptor releases the flock.
	if err := f.Close(); err != nil {
		return fmt.Errorf("mmap: unlock %s: %w", f.Name(), err)
	}
	return nil
}
