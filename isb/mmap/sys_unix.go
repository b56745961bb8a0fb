//go:build linux || darwin

package mmap

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// This file holds the system calls that Linux and macOS share; hole_linux.go
// and hole_darwin.go hold the one that differs (hole punching),
// sys_other.go what every other system gets: an error at Open. The lock
// and fdatasync are fsutil's.

// mapFile maps size bytes of f shared and read-write. MADV_RANDOM stops
// the kernel from reading ahead (and, for pages dirtied through the
// mapping, from writing back whole clusters around them on a flush).
func mapFile(f *os.File, size int64) ([]byte, error) {
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap: map %d bytes of %s: %w", size, f.Name(), err)
	}
	if err := unix.Madvise(data, unix.MADV_RANDOM); err != nil {
		unix.Munmap(data)
		return nil, fmt.Errorf("mmap: madvise %s: %w", f.Name(), err)
	}
	return data, nil
}

// unmapFile releases a mapping made by mapFile.
func unmapFile(data []byte) { unix.Munmap(data) }

// seekHole returns the start of the first hole at or after pos in f.
func seekHole(f *os.File, pos int64) (int64, error) {
	return unix.Seek(int(f.Fd()), pos, unix.SEEK_HOLE)
}

// allocated returns the bytes the file of fi occupies on disk: less than
// its size for a segment, which is preallocated as a hole.
func allocated(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return -1
}
