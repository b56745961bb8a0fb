package pipeline

import (
	"errors"
	"fmt"
	"os"

	"github.com/runnel-dev/runnel/internal/datadir"
	"github.com/runnel-dev/runnel/internal/fsutil"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// Source state: on durable storage a source that is vertex.Resumable keeps
// its position in one file, {data dir}/{pipeline}/{vertex}.source (a vertex
// name has no '.', so it never collides with a buffer's directory). The
// file is replaced atomically (fsutil.WriteFileAtomic): written to
// {file}.tmp, fsynced, renamed over the file, and the directory fsynced.
// Its format, a checksummed frame around the state and the anchors, is
// internal/datadir's (which cmd/runnel reads too).
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
	stateMagic      = datadir.StateMagic
	stateHeaderSize = datadir.StateHeaderSize
	stateMaxSize    = datadir.StateMaxSize
	stateSuffix     = datadir.StateSuffix
)

// savedState is what a state file holds.
type savedState struct {
	state []byte
	// anchors are by output buffer (its vertex), one per partition; nil
	// for a version 1 file.
	anchors map[string][]int64
}

// encodeState frames s (datadir.EncodeState).
func encodeState(s savedState) []byte {
	return datadir.EncodeState(datadir.State{State: s.state, Anchors: s.anchors})
}

// decodeState checks a state file's bytes and returns what it holds
// (copies); bytes that do not match are a *StateError naming file.
func decodeState(file string, b []byte) (savedState, error) {
	s, off, reason := datadir.DecodeState(b)
	if reason != "" {
		return savedState{}, &StateError{File: file, Offset: off, Reason: reason}
	}
	return savedState{state: s.State, anchors: s.Anchors}, nil
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
