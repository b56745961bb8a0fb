package fsutil

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// Unsupported is the error of a store (what, e.g. "the WAL") on a system
// other than Linux and macOS: sentinel, the store's ErrUnsupported, with
// the reason.
func Unsupported(sentinel error, what string) error {
	return fmt.Errorf("%w: %s runs on linux and darwin, not %s", sentinel, what, runtime.GOOS)
}

// errWouldBlock is lockFile's error when another open file description
// holds the lock.
var errWouldBlock = errors.New("lock held")

// LockDir takes an exclusive, non-blocking lock (flock) on dir for the
// store of package pkg and returns the open directory that holds it;
// closing it releases the lock. flock belongs to the open file
// description, so a second LockDir of the same directory fails in this
// process as well as in another; the kernel drops the lock when the
// process dies, so a crash never leaves a stale lock.
//
// Its errors are the store's, returned as they are: when another holds
// the lock, held (the store's ErrLocked) followed by dir; on a system
// other than Linux and macOS, unsupported (the store's ErrUnsupported with
// its reason) after "{pkg}: lock {dir}: "; any other failure after the same
// prefix.
func LockDir(pkg, dir string, held, unsupported error) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: open directory for locking: %w", pkg, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		switch {
		case errors.Is(err, errWouldBlock):
			return nil, fmt.Errorf("%w: %s", held, dir)
		case errors.Is(err, errors.ErrUnsupported):
			err = unsupported
		}
		return nil, fmt.Errorf("%s: lock %s: %w", pkg, dir, err)
	}
	return f, nil
}
