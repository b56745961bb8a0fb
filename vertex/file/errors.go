package file

import (
	"errors"
	"fmt"

	"github.com/runnel-dev/runnel/vertex"
)

// Sentinel errors of package file, matched with errors.Is. Each comes
// wrapped in a [*Error] that names the file and the byte offset.
var (
	// ErrLineTooLong: a line of the input is longer than MaxLineBytes.
	ErrLineTooLong = errors.New("file: line longer than the maximum")
	// ErrTruncated: a file is shorter than the position the source read or
	// saved in it. Its content changed under what the pipeline
	// acknowledged; the source does not guess what to read (see the
	// package doc, "Files that change").
	ErrTruncated = errors.New("file: file is shorter than its position")
	// ErrReplaced: the path names another file (another device and inode)
	// than the one the source read or saved a position in.
	ErrReplaced = errors.New("file: file replaced under its position")
	// ErrNewline: a value given to the sink contains a newline, so it
	// cannot be written as one line. The sink answers such a message
	// vertex.ResultFallback.
	ErrNewline = errors.New("file: value contains a newline")
	// ErrLocked: another sink (in this process or another) writes to the
	// directory. Two sinks numbering files in one directory would write
	// the same names.
	ErrLocked = errors.New("file: directory locked by another sink")
	// ErrUnsupported: the sink runs on Linux and macOS, where it can lock
	// its directory and flush data to the disk.
	ErrUnsupported = errors.New("file: unsupported on this system")
)

// Error is a failure at a place in a file: reading, opening, checking or
// writing it. It wraps the cause: a sentinel of this package or an error
// of package os (errors.Is(err, fs.ErrPermission) works through it).
type Error struct {
	Op     string // what failed: "open", "read", "stat", "write", ...
	Path   string
	Offset int64 // the byte offset in Path concerned; -1 when none
	Err    error
}

func (e *Error) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("file: %s %s: %v", e.Op, e.Path, e.Err)
	}
	return fmt.Sprintf("file: %s %s at offset %d: %v", e.Op, e.Path, e.Offset, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// optionError is an option of this package that failed validation.
func optionError(option string, value any, reason string) *vertex.OptionError {
	return &vertex.OptionError{Package: "file", Option: option, Value: value, Reason: reason}
}
