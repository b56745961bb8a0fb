package wal

import (
	"errors"
	"fmt"

	"github.com/runnel-dev/runnel/internal/fsutil"
)

// Sentinel errors, matched with errors.Is. Damage is a *CorruptError
// (matching ErrCorrupt), an entry of another format version a
// *VersionError (matching ErrVersion).

// The errors of Open that are not about the log's content.
var (
	// ErrLocked is returned by Open when the directory is open in another
	// WAL, in this process or another one.
	ErrLocked = errors.New("wal: directory is locked by another open WAL")
	// ErrUnsupported is returned by Open on a system other than Linux and
	// macOS: the WAL needs flock and read-only mappings as they work there.
	ErrUnsupported = errors.New("wal: unsupported operating system")
)

// errNotHere is the error of Open off Linux and macOS.
var errNotHere = fsutil.Unsupported(ErrUnsupported, "the WAL")

// The errors of calls on an open WAL.
var (
	// ErrClosed is returned by calls on a closed WAL.
	ErrClosed = errors.New("wal: closed")
	// ErrInvalid is returned for an entry or window the log cannot store;
	// the message names what and why. A bad option is an
	// *isb.OptionError (errors.Is isb.ErrInvalidOption), as in every
	// runnel package.
	ErrInvalid = errors.New("wal: invalid argument")
	// ErrReplayAfterAppend is returned by Replay once anything was appended:
	// replay rebuilds state before the reduce resumes reading, and the
	// periodic compaction that appends enable may rewrite the log under it.
	ErrReplayAfterAppend = errors.New("wal: Replay after the first Append or GC")
)

// errDamaged is wrapped by the decoder's errors for bytes that are not a
// valid entry; recovery turns it into a repair or a *CorruptError.
var errDamaged = errors.New("damaged entry")

// ErrCorrupt is matched by every *CorruptError.
var ErrCorrupt = errors.New("wal: corrupt log")

// CorruptError reports damage a crash cannot have caused: a bad entry
// followed by entries of a later, acknowledged write batch, a bad or
// missing entry that a clean Close recorded as acknowledged, a segment with
// the wrong number of entries, a missing segment, a stray file the log would
// act on. Nothing is repaired or dropped when Open returns it.
//
// The embedded Corruption holds File (the damaged segment file, or the
// directory), Offset (byte position in File, -1 when not known) and Reason.
type CorruptError struct {
	fsutil.Corruption
	Index uint64 // log index of the first damaged entry, 0 when not about an entry
}

// Error names the file, the entry index and the byte position when known.
func (e *CorruptError) Error() string {
	at := ""
	if e.Index != 0 {
		at = fmt.Sprintf("entry %d", e.Index)
	}
	return fsutil.FormatCorruption("wal", e.Corruption, at)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// ErrVersion is matched by every *VersionError.
var ErrVersion = errors.New("wal: unsupported entry format version")

// VersionError reports an intact entry (its crc matches) written in a
// format version this package does not read: a newer runnel wrote the log.
type VersionError struct {
	File    string // the segment file
	Index   uint64 // log index of the entry
	Version byte   // the version found
}

// Error names the file, the entry and both versions.
func (e *VersionError) Error() string {
	return fmt.Sprintf("wal: %s entry %d has format version %d, this runnel reads version %d", e.File, e.Index, e.Version, formatVersion)
}

// Is makes errors.Is(err, ErrVersion) true.
func (e *VersionError) Is(target error) bool { return target == ErrVersion }

func corrupt(file string, index uint64, off int64, format string, args ...any) *CorruptError {
	return &CorruptError{Corruption: fsutil.Corruptf(file, off, format, args...), Index: index}
}

// errSwitchUndecided reports a compaction whose generation switch could not
// be made durable nor undone: the WAL stops.
var errSwitchUndecided = errors.New("wal: compaction switched generations but could not make the switch durable nor undo it")

// errStopReplay ends a walk when the caller of Replay stops ranging.
var errStopReplay = errors.New("replay stopped")
