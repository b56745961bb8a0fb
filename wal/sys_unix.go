//go:build linux || darwin

package wal

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// This file holds the system calls of Linux and macOS; sys_linux.go and
// sys_darwin.go the one flag that differs, sys_other.go what every other
// system gets: ErrUnsupported at Open.

// lockFile takes an exclusive, non-blocking flock on f; errWouldBlock
// when another open file description holds it.
func lockFile(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return errWouldBlock
	}
	return err
}

// mapReadOnly maps the first size bytes of f read-only; unmap releases
// the mapping.
func mapReadOnly(f *os.File, size int) (data []byte, unmap func(), err error) {
	b, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED|mapPopulate)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { unix.Munmap(b) }, nil
}
