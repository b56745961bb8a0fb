package mmap

import (
	"fmt"
	"os"
)

// The topic directory is locked with fsutil.LockDir (flock) when a Backend
// opens it: a second open of the same topic fails in this process as in
// another one, and the kernel drops the lock when the process dies, so a
// crash never leaves a stale lock.

// unlockDir releases the lock taken at open.
func unlockDir(f *os.File) error {
	// Closing the descriptor releases the flock.
	if err := f.Close(); err != nil {
		return fmt.Errorf("mmap: unlock %s: %w", f.Name(), err)
	}
	return nil
}
