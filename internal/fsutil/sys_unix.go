//go:build linux || darwin

package fsutil

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// This file holds the system calls that Linux and macOS share;
// sync_linux.go and sync_darwin.go the one that differs (Fdatasync),
// sys_other.go what every other system gets: errors.ErrUnsupported.

// lockFile takes an exclusive, non-blocking flock on f; errWouldBlock
// when another open file description holds it.
func lockFile(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return errWouldBlock
	}
	return err
}
