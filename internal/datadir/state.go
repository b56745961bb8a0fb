package datadir

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/runnel-dev/runnel/internal/crc32c"
)

// A source state file, {dir}/{pipeline}/{vertex}.source, is replaced
// atomically (fsutil.WriteFileAtomic). Integers are little-endian.
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
// Version 1 files (payload = the state, no anchors) are still read.
// Package pipeline's storage_state.go says what the anchors mean.
const (
	StateMagic      = "RNSS"
	StateVersion    = 2
	StateHeaderSize = 16
	// StateMaxSize bounds a source's own state: a position, not a data
	// store.
	StateMaxSize    = 1 << 20
	statePayloadMax = 2 << 20 // the state and the anchors
)

// State is what a source state file holds.
type State struct {
	Version uint32 // of the file: 1 or StateVersion
	State   []byte // the source's own bytes
	// Anchors are by output buffer (its vertex), one offset per
	// partition; nil in a version 1 file.
	Anchors map[string][]int64
}

// EncodeState frames s as a version 2 file (s.Version is not read).
func EncodeState(s State) []byte {
	b := make([]byte, StateHeaderSize, StateHeaderSize+8+len(s.State)+64)
	copy(b, StateMagic)
	binary.LittleEndian.PutUint32(b[4:], StateVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s.State)))
	b = append(b, s.State...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s.Anchors)))
	for _, name := range slices.Sorted(maps.Keys(s.Anchors)) {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(name)))
		b = append(b, name...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s.Anchors[name])))
		for _, a := range s.Anchors[name] {
			b = binary.LittleEndian.AppendUint64(b, uint64(a))
		}
	}
	payload := b[StateHeaderSize:]
	binary.LittleEndian.PutUint32(b[8:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[12:], crc32c.Checksum(payload))
	return b
}

// DecodeState checks the bytes of a state file and returns what it holds
// (copies). Bytes that do not match (a short or long file, a wrong magic,
// version or checksum, a payload whose sections do not add up) return the
// byte position and the reason instead.
func DecodeState(b []byte) (s State, off int, reason string) {
	bad := func(off int, format string, args ...any) (State, int, string) {
		return State{}, off, fmt.Sprintf(format, args...)
	}
	if len(b) < StateHeaderSize {
		return bad(len(b), "truncated: %d bytes, the header has %d", len(b), StateHeaderSize)
	}
	if string(b[:4]) != StateMagic {
		return bad(0, "magic %q, want %q", b[:4], StateMagic)
	}
	v := binary.LittleEndian.Uint32(b[4:])
	if v != 1 && v != StateVersion {
		return bad(4, "version %d is not supported (this build reads 1 and %d)", v, StateVersion)
	}
	n := binary.LittleEndian.Uint32(b[8:])
	if n > statePayloadMax || int(n) != len(b)-StateHeaderSize {
		return bad(8, "length %d, but %d bytes follow the header", n, len(b)-StateHeaderSize)
	}
	payload := b[StateHeaderSize:]
	if got, want := crc32c.Checksum(payload), binary.LittleEndian.Uint32(b[12:]); got != want {
		return bad(12, "checksum %#08x, the payload's is %#08x", want, got)
	}
	if v == 1 {
		return State{Version: 1, State: bytes.Clone(payload)}, 0, ""
	}
	d := stateReader{b: b, at: StateHeaderSize}
	sn, ok := d.u32()
	if !ok {
		return bad(d.at, "no state length")
	}
	state, ok := d.bytes(int(sn))
	if !ok || sn > StateMaxSize {
		return bad(StateHeaderSize, "the state's length %d does not fit the payload of %d bytes", sn, n)
	}
	s = State{Version: v, State: bytes.Clone(state)}
	edges, ok := d.u32()
	if !ok {
		return bad(d.at, "no edge count after the state")
	}
	s.Anchors = map[string][]int64{}
	for range edges {
		at := d.at
		name, parts, ok := d.edge()
		if !ok {
			return bad(at, "edge %d of %d does not fit the payload", len(s.Anchors), edges)
		}
		if _, dup := s.Anchors[string(name)]; dup {
			return bad(at, "edge %q appears twice", name)
		}
		s.Anchors[string(name)] = parts
	}
	if d.at != len(b) {
		return bad(d.at, "%d bytes after the last edge", len(b)-d.at)
	}
	return s, 0, ""
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
