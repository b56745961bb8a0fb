package pipeline

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/runnel-dev/runnel/internal/crc32c"
	"github.com/runnel-dev/runnel/internal/fsutil"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// Source state: on durable storage a source that is vertex.Resumable keeps
// its position in one file, {data dir}/{pipeline}/{vertex}.source (a vertex
// name has no '.', so it never collides with a buffer's directory). The
// file is replaced atomically (fsutil.WriteFileAtomic): written to
// {file}.tmp, fsynced, renamed over the file, and the directory fsynced. Integers are little-endian.
//
//	+--------+-------------+----------------+------------------+---------+
//	| "RNSS" | version u32 | length u32     | crc32c u32       | payload |
//	|        | = 2         | of the payload | (Castagnoli) of  | length  |
//	|        |             |                | the payload      | bytes   |
//	+--------+-------------+----------------+------------------+---------+
//	 0        4             8                12                 16
//
//	payload: state length u32 | state | edges u32 | per edge:
//	         name length u16 | name | partitions u32 | anchor i64 per partition
//
// The state is the source's own bytes (vertex.StateStore); the anchors are
// the pipeline's, saved with it: for each output buffer only this source
// writes to (named by its vertex), per partition, an offset at or below
// every record of a message the state does not cover. On restart the
// pipeline reads each partition from its anchor to its tail to find what
// the source wrote after the state (see source_resume.go). Version 1 files
// (payload = the state, no anchors) are still read.
//
// A file that does not match, a short or long one, a wrong magic, version
// or checksum, a payload whose sections do not add up, is a *StateError
// (matching ErrCorruptState) naming the file and the offset: Run fails
// instead of restarting the source from its beginning. Delete the file to
// do that deliberately.

// ErrCorruptState is matched by every *StateError.
var ErrCorruptState = errors.New("pipeline: corrupt source state")

// StateError reports a source state file that cannot be read back.
type StateError struct {
	File   string
	Offset int
	Reason string
}

func (e *StateError) Error() string {
	return fmt.Sprintf("pipeline: source state %s at byte %d: %s", e.File, e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrCorruptState) true.
func (e *StateError) Is(target error) bool { return target == ErrCorruptState }

const (
	stateMagic      = "RNSS"
	stateVersion    = 2
	stateHeaderSize = 16
	stateMaxSize    = 1 << 20 // a position, not a data store
	statePayloadMax = 2 << 20 // the state and the anchors
	stateSuffix     = ".source"
)

// savedState is what a state file holds.
type savedState struct {
	state []byte
	// anchors are by output buffer (its vertex), one per partition; nil
	// for a version 1 file.
	anchors map[string][]int64
}

// encodeState frames s as drawn above.
func encodeState(s savedState) []byte {
	b := make([]byte, stateHeaderSize, stateHeaderSize+8+len(s.state)+64)
	copy(b, stateMagic)
	binary.LittleEndian.PutUint32(b[4:], stateVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s.state)))
	b = append(b, s.state...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s.anchors)))
	for _, name := range slices.Sorted(maps.Keys(s.anchors)) {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(name)))
		b = append(b, name...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s.anchors[name])))
		for _, a := range s.anchors[name] {
			b = binary.LittleEndian.AppendUint64(b, uint64(a))
		}
	}
	payload := b[stateHeaderSize:]
	binary.LittleEndian.PutUint32(b[8:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[12:], crc32c.Checksum(payload))
	return b
}

// decodeState checks a state file's bytes and returns what it holds
// (copies).
func decodeState(file string, b []byte) (savedState, error) {
	bad := func(off int, format string, args ...any) (savedState, error) {
		return savedState{}, &StateError{File: file, Offset: off, Reason: fmt.Sprintf(format, args...)}
	}
	if len(b) < stateHeaderSize {
		return bad(len(b), "truncated: %d bytes, the header has %d", len(b), stateHeaderSize)
	}
	if string(b[:4]) != stateMagic {
		return bad(0, "magic %q, want %q", b[:4], stateMagic)
	}
	v := binary.LittleEndian.Uint32(b[4:])
	if v != 1 && v != stateVersion {
		return bad(4, "version %d is not supported (this build reads 1 and %d)", v, stateVersion)
	}
	n := binary.LittleEndian.Uint32(b[8:])
	if n > statePayloadMax || int(n) != len(b)-stateHeaderSize {
		return bad(8, "length %d, but %d bytes follow the header", n, len(b)-stateHeaderSize)
	}
	payload := b[stateHeaderSize:]
	if got, want := crc32c.Checksum(payload), binary.LittleEndian.Uint32(b[12:]); got != want {
		return bad(12, "checksum %#08x, the payload's is %#08x", want, got)
	}
	if v == 1 {
		return savedState{state: bytes.Clone(payload)}, nil
	}
	d := stateReader{b: b, at: stateHeaderSize}
	sn, ok := d.u32()
	if !ok {
		return bad(d.at, "no state length")
	}
	state, ok := d.bytes(int(sn))
	if !ok || sn > stateMaxSize {
		return bad(stateHeaderSize, "the state's length %d does not fit the payload of %d bytes", sn, n)
	}
	s := savedState{state: bytes.Clone(state)}
	edges, ok := d.u32()
	if !ok {
		return bad(d.at, "no edge count after the state")
	}
	s.anchors = map[string][]int64{}
	for range edges {
		at := d.at
		name, parts, ok := d.edge()
		if !ok {
			return bad(at, "edge %d of %d does not fit the payload", len(s.anchors), edges)
		}
		if _, dup := s.anchors[string(name)]; dup {
			return bad(at, "edge %q appears twice", name)
		}
		s.anchors[string(name)] = parts
	}
	if d.at != len(b) {
		return bad(d.at, "%d bytes after the last edge", len(b)-d.at)
	}
	return s, nil
}

// stateReader reads a state file's payload; at is the file offset.
type stateReader struct {
	b  []byte
	at int
}

func (r *stateReader) bytes(n int) ([]byte, bool) {
	if n < 0 || n > len(r.b)-r.at {
		return nil, false
	}
	r.at += n
	return r.b[r.at-n : r.at], true
}

func (r *stateReader) u32() (uint32, bool) {
	b, ok := r.bytes(4)
	if !ok {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b), true
}

// edge reads one edge's name and anchors.
func (r *stateReader) edge() (name []byte, anchors []int64, ok bool) {
	nb, ok := r.bytes(2)
	if !ok {
		return nil, nil, false
	}
	if name, ok = r.bytes(int(binary.LittleEndian.Uint16(nb))); !ok {
		return nil, nil, false
	}
	parts, ok := r.u32()
	if !ok || int64(parts)*8 > int64(len(r.b)-r.at) {
		return nil, nil, false
	}
	anchors = make([]int64, parts)
	for i := range anchors {
		b, _ := r.bytes(8)
		anchors[i] = int64(binary.LittleEndian.Uint64(b))
	}
	return name, anchors, true
}

// sourceState is the vertex.StateStore of one source vertex: the framed
// state (drawn above) in the storage's StateStore. With anchors set, each
// Save also records the anchors of the source's output buffers and, once
// the state is durable, holds them there (see source_resume.go).
type sourceState struct {
	store   StateStore
	anchors *sourceAnchors // nil: the state alone
}

var _ vertex.StateStore = sourceState{}

// readState reads what store holds; ok is false when it holds nothing.
func readState(store StateStore) (s savedState, ok bool, err error) {
	b, ok, err := store.Load()
	if err != nil {
		return savedState{}, false, fmt.Errorf("pipeline: source state %s: %w", store, err)
	}
	if !ok {
		return savedState{}, false, nil
	}
	s, err = decodeState(store.String(), b)
	if err != nil {
		return savedState{}, false, err
	}
	return s, true, nil
}

// Load reads the state, or reports that none was saved.
func (f sourceState) Load() ([]byte, bool, error) {
	s, ok, err := readState(f.store)
	return s.state, ok, err
}

// Save replaces the state durably: after a crash at any point, Load
// returns either this state or the previous one.
func (f sourceState) Save(state []byte) error {
	if len(state) > stateMaxSize {
		return &isb.OptionError{Package: "pipeline", Option: "source state", Value: len(state), Reason: fmt.Sprintf("must be at most %d bytes", stateMaxSize)}
	}
	s := savedState{state: state}
	if f.anchors != nil {
		s.anchors = f.anchors.now()
	}
	if err := f.store.Save(encodeState(s)); err != nil {
		return fmt.Errorf("pipeline: source state %s: %w", f.store, err)
	}
	if f.anchors != nil {
		return f.anchors.hold(s.anchors)
	}
	return nil
}

// fileState is mmap storage's StateStore: a file replaced atomically
// (fsutil.WriteFileAtomic).
type fileState string

func (f fileState) String() string { return string(f) }

func (f fileState) Load() ([]byte, bool, error) {
	b, err := os.ReadFile(string(f))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	return b, err == nil, err
}

func (f fileState) Save(b []byte) error { return fsutil.WriteFileAtomic(string(f), b) }
