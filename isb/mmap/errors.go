package mmap

import (
	"errors"
	"fmt"

	"github.com/runnel-dev/runnel/internal/fsutil"
	"github.com/runnel-dev/runnel/isb"
)

// Sentinel errors, matched with errors.Is. Damaged data is reported as a
// *CorruptError, which matches isb.ErrCorrupt.
var (
	// ErrLocked is returned by Open when another open topic (in this or
	// another process) holds the topic directory.
	ErrLocked = errors.New("mmap: topic directory is locked")
	// ErrInvalidName is returned by Open for a topic name that is not a
	// single path component.
	ErrInvalidName = errors.New("mmap: invalid topic name")
	// ErrOpened is returned by a second Open of a Backend, also after
	// Close: a Backend stores one topic once; reopen it with a new one.
	ErrOpened = errors.New("mmap: backend already opened")
	// ErrUnsupported is returned by Open on a system other than Linux and
	// macOS: the storage needs flock, shared mappings, fdatasync and
	// sparse files as they work there.
	ErrUnsupported = errors.New("mmap: unsupported operating system")
	// ErrReadSize is returned by a Read asking for fewer than one item.
	ErrReadSize = errors.New("mmap: read size must be at least 1")
)

// errNotHere is the error of Open off Linux and macOS.
var errNotHere = fsutil.Unsupported(ErrUnsupported, "memory-mapped storage")

// ErrFault is matched by every *FaultError.
var ErrFault = errors.New("mmap: memory fault on a segment mapping")

// FaultError reports a memory fault while reading a segment through its
// mapping, caught instead of killing the process: the file was truncated
// under the mapping by something else, or its file system could not supply
// a page the read needed (a hole of a tmpfs that is full). The Read or
// Open that hit it returns it; nothing was changed.
type FaultError struct {
	File   string  // the segment file, "" when the address is in no segment's mapping
	Offset int64   // byte position in File, -1 when File is not known
	Addr   uintptr // the faulting address
}

// Error names the file and byte position.
func (e *FaultError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("mmap: memory fault at address %#x reading a segment mapping", e.Addr)
	}
	return fmt.Sprintf("mmap: memory fault reading %s at byte %d through its mapping (the file truncated under it, or a full tmpfs that has no page for a hole)", e.File, e.Offset)
}

// Is makes errors.Is(err, ErrFault) true.
func (e *FaultError) Is(target error) bool { return target == ErrFault }

// CorruptError reports damaged or inconsistent storage: a record that fails
// its checksum, a checkpoint that does not match the log, a missing segment.
// It matches isb.ErrCorrupt. The embedded Corruption holds File (the
// damaged file or directory), Offset (byte position in File, -1 when the
// whole file is concerned) and Reason.
type CorruptError struct {
	fsutil.Corruption
	Err error // the underlying error, e.g. the codec's, if any
}

// Error names the file, the byte position when known, and the reason.
func (e *CorruptError) Error() string { return fsutil.FormatCorruption("mmap", e.Corruption, "") }

// Is makes errors.Is(err, isb.ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == isb.ErrCorrupt }

// Unwrap returns the underlying error, if any.
func (e *CorruptError) Unwrap() error { return e.Err }

// ErrTooLarge is matched by every *TooLargeError.
var ErrTooLarge = errors.New("mmap: item larger than a segment")

// TooLargeError reports an item whose record cannot fit in one segment.
// Nothing of its batch is stored.
type TooLargeError struct {
	Index  int // position of the item in its batch
	Record int // size of its record in bytes (payload plus framing)
	Max    int // the largest record a segment holds
}

// Error gives the item's index, its record size and the limit.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("mmap: item %d of the batch encodes to a %d-byte record, larger than the %d bytes a segment holds (raise SegmentSize)", e.Index, e.Record, e.Max)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

func corrupt(file string, off int64, format string, args ...any) *CorruptError {
	return &CorruptError{Corruption: fsutil.Corruptf(file, off, format, args...)}
}

// ErrMismatch is matched by every *MismatchError.
var ErrMismatch = errors.New("mmap: topic opened with different parameters than it was created with")

// MismatchError reports an Open that asks for a different partition count,
// codec, element type or format version than the topic records in its
// metadata file. Nothing is changed on disk.
type MismatchError struct {
	File   string // the topic's metadata file
	Field  string // "partition count", "codec", "element type" or "format version"
	Stored string // what the topic was created with
	Asked  string // what this Open asked for
}

// Error names the field, the stored value and the asked one.
func (e *MismatchError) Error() string {
	return fmt.Sprintf("mmap: %s: the topic was created with %s %s, opened with %s", e.File, e.Field, e.Stored, e.Asked)
}

// Is makes errors.Is(err, ErrMismatch) true.
func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }
