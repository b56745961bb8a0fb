package pipeline

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/runnel-dev/runnel/isb"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/runnel-dev/runnel/vertex"
)

// Source state: on durable storage a source that is vertex.Resumable keeps
// its position in one file, {data dir}/{pipeline}/{vertex}.source (a vertex
// name has no '.', so it never collides with a buffer's directory). The
// file is replaced atomically: written to {file}.tmp, fsynced, renamed over
// the file, and the directory fsynced. Integers are little-endian.
//
//	+--------+-------------+----------------+------------------+---------+
//	| "RNSS" | version u32 | length u32     | crc32c u32       | state   |
//	|        | = 1         | of the state   | (Castagnoli) of  | length  |
//	|        |             |                | the state        | bytes   |
//	+--------+-------------+----------------+------------------+---------+
//	 0        4             8                12                 16
//
// A file that does not match, a short or long one, a wrong magic, version
// or checksum, is a *StateError (matching ErrCorruptState) naming the file
// and the offset: Run fails instead of restarting the source from its
// beginning. Delete the file to do that deliberately.

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
	stateVersion    = 1
	stateHeaderSize = 16
	stateMaxSize    = 1 << 20 // a position, not a data store
	stateSuffix     = ".source"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// stateFile is the vertex.StateStore of one source vertex.
type stateFile struct{ path string }

var _ vertex.StateStore = stateFile{}

// encodeState frames state as drawn above.
func encodeState(state []byte) []byte {
	b := make([]byte, stateHeaderSize, stateHeaderSize+len(state))
	copy(b, stateMagic)
	binary.LittleEndian.PutUint32(b[4:], stateVersion)
	binary.LittleEndian.PutUint32(b[8:], uint32(len(state)))
	binary.LittleEndian.PutUint32(b[12:], crc32.Checksum(state, castagnoli))
	return append(b, state...)
}

// decodeState checks a state file's bytes and returns the state (a copy).
func decodeState(file string, b []byte) ([]byte, error) {
	bad := func(off int, format string, args ...any) ([]byte, error) {
		return nil, &StateError{File: file, Offset: off, Reason: fmt.Sprintf(format, args...)}
	}
	if len(b) < stateHeaderSize {
		return bad(len(b), "truncated: %d bytes, the header has %d", len(b), stateHeaderSize)
	}
	if string(b[:4]) != stateMagic {
		return bad(0, "magic %q, want %q", b[:4], stateMagic)
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != stateVersion {
		return bad(4, "version %d is not supported (this build reads %d)", v, stateVersion)
	}
	n := binary.LittleEndian.Uint32(b[8:])
	if n > stateMaxSize || int(n) != len(b)-stateHeaderSize {
		return bad(8, "length %d, but %d bytes follow the header", n, len(b)-stateHeaderSize)
	}
	state := b[stateHeaderSize:]
	if got, want := crc32.Checksum(state, castagnoli), binary.LittleEndian.Uint32(b[12:]); got != want {
		return bad(12, "checksum %#08x, the state's is %#08x", want, got)
	}
	return append([]byte(nil), state...), nil
}

// Load reads the state, or reports that none was saved.
func (f stateFile) Load() ([]byte, bool, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("pipeline: source state: %w", err)
	}
	state, err := decodeState(f.path, b)
	if err != nil {
		return nil, false, err
	}
	return state, true, nil
}

// Save replaces the state durably: after a crash at any point, Load
// returns either this state or the previous one.
func (f stateFile) Save(state []byte) error {
	if len(state) > stateMaxSize {
		return &isb.OptionError{Package: "pipeline", Option: "source state", Value: len(state), Reason: fmt.Sprintf("must be at most %d bytes", stateMaxSize)}
	}
	tmp := f.path + ".tmp"
	if err := writeSynced(tmp, encodeState(state)); err != nil {
		return fmt.Errorf("pipeline: source state: %w", err)
	}
	if err := os.Rename(tmp, f.path); err != nil {
		return fmt.Errorf("pipeline: source state: %w", err)
	}
	return syncDir(filepath.Dir(f.path))
}

func writeSynced(path string, b []byte) error {
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = file.Write(b)
	if err == nil {
		err = file.Sync()
	}
	return errors.Join(err, file.Close())
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("pipeline: source state: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pipeline: source state: sync %s: %w", dir, err)
	}
	return nil
}

// resumeSource gives a resumable source its store, once per run, before
// any replica reads: on durable storage only (memory storage restarts
// every source from its beginning, as it does the buffers).
func resumeSource(c *config, p *Pipeline, n *node, src any) error {
	n.resumeOnce.Do(func() {
		r, ok := src.(vertex.Resumable)
		s, durable := c.storage.(*mmapStorage)
		if !ok || !durable {
			return
		}
		dir := filepath.Join(s.dir, p.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			n.resumeErr = &VertexError{Vertex: n.name, Err: fmt.Errorf("source state: %w", err)}
			return
		}
		if err := r.Resume(stateFile{path: filepath.Join(dir, n.name+stateSuffix)}); err != nil {
			n.resumeErr = &VertexError{Vertex: n.name, Err: err}
		}
	})
	return n.resumeErr
}
