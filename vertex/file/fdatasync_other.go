//go:build !linux

package file

import "os"

// fdatasync flushes f to the disk: fsync (F_FULLFSYNC on macOS), which
// holds f open for the call as Control does on Linux.
func fdatasync(f *os.File) error { return f.Sync() }
