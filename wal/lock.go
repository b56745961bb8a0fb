package wal

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/runnel-dev/runnel/internal/fsutil"
)

// lockDir takes an exclusive, non-blocking flock on dir (fsutil.LockDir).
// flock belongs to the open file description, so a second Open of the
// same directory fails in this process as well as in another; the kernel
// drops the lock when the process dies, so a crash never leaves a stale
// lock.
func lockDir(dir string) (*os.File, error) {
	f, err := fsutil.LockDir(dir)
	switch {
	case err == nil:
		return f, nil
	case errors.Is(err, fsutil.ErrWouldBlock):
		return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
	case errors.Is(err, errors.ErrUnsupported):
		return nil, fmt.Errorf("wal: lock %s: %w", dir, unsupported()) // off linux and darwin
	}
	return nil, fmt.Errorf("wal: %w", err)
}

// unsupported is the error of Open off Linux and macOS.
func unsupported() error {
	return fmt.Errorf("%w: the WAL runs on linux and darwin, not %s", ErrUnsupported, runtime.GOOS)
}
