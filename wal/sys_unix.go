//go:build linux || darwin

package wal

import (
	"os"

	"golang.org/x/sys/unix"
)

// This file holds the system calls of Linux and macOS; sys_linux.go and
// sys_darwin.go the one flag that differs, sys_other.go what every other
// system gets: ErrUnsupported at Open. The lock is fsutil's.

// mapReadOnly maps the first size bytes of f read-only; unmap releases
// the mapping.
func mapReadOnly(f *os.File, size int) (data []byte, unmap func(), err error) {
	b, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED|mapPopulate)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { unix.Munmap(b) }, nil
}
