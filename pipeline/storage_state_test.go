package pipeline

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/crc32c"
	"github.com/runnel-dev/runnel/internal/fsutil"
	"github.com/runnel-dev/runnel/vertex"
)

func TestStateFileRoundTrip(t *testing.T) {
	f := sourceState{store: fileState(filepath.Join(t.TempDir(), "v.source"))}
	if _, ok, err := f.Load(); ok || err != nil {
		t.Fatalf("Load of a missing file = ok %v, err %v; want nothing saved", ok, err)
	}
	for _, state := range [][]byte{{1, 2, 3}, {}, []byte(strings.Repeat("x", 5000))} {
		if err := f.Save(state); err != nil {
			t.Fatal(err)
		}
		got, ok, err := f.Load()
		if err != nil || !ok || string(got) != string(state) {
			t.Fatalf("Load after Save(%d bytes) = %d bytes, ok %v, err %v", len(state), len(got), ok, err)
		}
	}
	// A save interrupted before its rename leaves a .tmp file: the state
	// is the previous one.
	if err := os.WriteFile(f.store.String()+".tmp", []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _, err := f.Load(); err != nil || len(got) != 5000 {
		t.Fatalf("Load beside a torn .tmp = %d bytes, %v; want the last saved state", len(got), err)
	}
	if err := f.Save(make([]byte, stateMaxSize+1)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("Save of an oversized state: %v, want ErrInvalidOption", err)
	}
}

// encodeStateV1 is the version 1 file of state: its payload is the state.
func encodeStateV1(state []byte) []byte {
	b := []byte(stateMagic)
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(state)))
	b = binary.LittleEndian.AppendUint32(b, crc32c.Checksum(state))
	return append(b, state...)
}

// refix recomputes the header's length and checksum of b, a file whose
// payload a test changed.
func refix(b []byte) []byte {
	b = append([]byte(nil), b...)
	binary.LittleEndian.PutUint32(b[8:], uint32(len(b)-stateHeaderSize))
	binary.LittleEndian.PutUint32(b[12:], crc32c.Checksum(b[stateHeaderSize:]))
	return b
}

func TestStateAnchorsRoundTrip(t *testing.T) {
	for _, s := range []savedState{
		{state: []byte("pos"), anchors: map[string][]int64{}},
		{state: []byte{}, anchors: map[string][]int64{"a": {0, 7}, "bb": {1 << 40}, "c": {}}},
	} {
		got, err := decodeState("f", encodeState(s))
		if err != nil || string(got.state) != string(s.state) || fmt.Sprint(got.anchors) != fmt.Sprint(s.anchors) {
			t.Fatalf("decode(encode(%v)) = %v, %v", s, got, err)
		}
	}
	got, err := decodeState("f", encodeStateV1([]byte("old")))
	if err != nil || string(got.state) != "old" || got.anchors != nil {
		t.Fatalf("a version 1 file: %v, %v; want its state and no anchors", got, err)
	}
}

func TestStateDecodeDamage(t *testing.T) {
	good := encodeState(savedState{state: []byte("position"), anchors: map[string][]int64{"m": {5, 9}}})
	flip := func(at int) []byte {
		b := append([]byte(nil), good...)
		b[at] ^= 0x40
		return b
	}
	// Payload: state length at 16, state at 20 (8 bytes), edges at 28,
	// name length at 32, name at 34, partitions at 35, anchors at 39.
	set32 := func(at int, v uint32) []byte {
		b := append([]byte(nil), good...)
		binary.LittleEndian.PutUint32(b[at:], v)
		return refix(b)
	}
	twice := append(append([]byte(nil), good...), good[32:]...)
	binary.LittleEndian.PutUint32(twice[28:], 2)
	cases := []struct {
		name   string
		in     []byte
		offset int
		reason string
	}{
		{"empty", nil, 0, "truncated: 0 bytes"},
		{"half a header", good[:9], 9, "truncated: 9 bytes"},
		{"torn payload", good[:len(good)-1], 8, "length 39, but 38 bytes follow"},
		{"trailing bytes", append(append([]byte(nil), good...), 0), 8, "length 39, but 40 bytes follow"},
		{"magic", flip(1), 0, "magic"},
		{"version", flip(4), 4, "version 66 is not supported"},
		{"length", flip(8), 8, "length 103"},
		{"checksum", flip(13), 12, "checksum"},
		{"state byte", flip(stateHeaderSize + 7), 12, "checksum"},
		{"anchor byte", flip(len(good) - 1), 12, "checksum"},
		{"state length", set32(16, 100), 16, "the state's length 100"},
		{"edge count", set32(28, 2), 55, "edge 1 of 2"},
		{"no edge count", refix(good[:28]), 28, "no edge count"},
		{"partitions", set32(35, 3), 32, "edge 0 of 1"},
		{"bytes after", refix(append(append([]byte(nil), good...), 1)), 55, "1 bytes after the last edge"},
		{"edge twice", refix(twice), 55, `edge "m" appears twice`},
	}
	for _, tc := range cases {
		_, err := decodeState("f", tc.in)
		var se *StateError
		if !errors.As(err, &se) || !errors.Is(err, ErrCorruptState) {
			t.Errorf("%s: err = %v, want a *StateError", tc.name, err)
			continue
		}
		if se.Offset != tc.offset || !strings.Contains(se.Reason, tc.reason) || se.File != "f" {
			t.Errorf("%s: %v; want offset %d, reason with %q", tc.name, err, tc.offset, tc.reason)
		}
	}
	// Every proper prefix of a valid file is refused.
	for n := range len(good) {
		if _, err := decodeState("f", good[:n]); !errors.Is(err, ErrCorruptState) {
			t.Fatalf("prefix of %d bytes: err %v", n, err)
		}
	}
}

// FuzzStateDecode: the state file decoder never panics, and what it
// accepts re-encodes to the same bytes.
//
//	go test -run '^$' -fuzz FuzzStateDecode -parallel 1 ./pipeline
func FuzzStateDecode(f *testing.F) {
	for _, s := range []string{"", "position", strings.Repeat("y", 100)} {
		for _, b := range [][]byte{
			encodeState(savedState{state: []byte(s)}),
			encodeState(savedState{state: []byte(s), anchors: map[string][]int64{"a": {1, 2}, "b": {}}}),
		} {
			f.Add(b)
			f.Add(b[:len(b)-1])
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := decodeState("f", in)
		if err != nil {
			if !errors.Is(err, ErrCorruptState) {
				t.Fatalf("error %v is not ErrCorruptState", err)
			}
			return
		}
		re := encodeState(s)
		if s.anchors == nil {
			re = encodeStateV1(s.state)
		}
		if string(re) != string(in) {
			t.Fatal("an accepted file does not re-encode to itself")
		}
	})
}

// TestGeneratorResumesOnDurableStorage stops a generator pipeline on mmap
// storage part-way (ctx cancelled: it drains) and runs a new one on the
// same directory: the second run starts after what the first delivered,
// and together they deliver every message exactly once.
func TestGeneratorResumesOnDurableStorage(t *testing.T) {
	dir := t.TempDir()
	const n = 20_000
	delivered := map[int64]int{}
	var mu sync.Mutex
	run := func(stopAfter int) (first int64, err error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		first = -1
		got := 0
		sink := vertex.SinkFunc[int64](func(_ context.Context, msgs []vertex.Message[int64]) ([]vertex.Result, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				if id, _ := strconv.ParseInt(m.ID, 10, 64); id != m.Value {
					t.Errorf("message %s carries %d", m.ID, m.Value)
				}
				if first < 0 || m.Value < first {
					first = m.Value
				}
				delivered[m.Value]++
			}
			if got += len(msgs); stopAfter > 0 && got >= stopAfter {
				cancel()
			}
			return nil, nil
		})
		p := New("gen", WithStorage(MMap(dir)))
		g := Source(p, "gen", vertex.Generator(func(i int64) int64 { return i }).WithCount(n), vertex.BatchSize(200))
		// The sink's buffer bounds how far the generator runs ahead of what
		// the sink saw, so the first run stops well before the end on any
		// machine: at most 5000 + 1000 + what is in flight.
		Sink(p, "sink", g, sink, vertex.BatchSize(100), vertex.BufferCapacity(1000))
		return first, p.Run(ctx)
	}
	if _, err := run(5000); err != nil {
		t.Fatalf("first run: %v", err)
	}
	firstRun := len(delivered)
	if firstRun >= n {
		t.Fatalf("the first run delivered all %d messages before it was stopped", n)
	}
	start, err := run(0)
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	if start != int64(firstRun) {
		t.Errorf("the second run started at message %d, want %d (the first run delivered %d)", start, firstRun, firstRun)
	}
	for i := range int64(n) {
		if c := delivered[i]; c != 1 {
			t.Fatalf("message %d delivered %d times over both runs, want 1", i, c)
		}
	}
	if len(delivered) != n {
		t.Fatalf("delivered %d distinct messages, want %d", len(delivered), n)
	}
}

// writeSynced writes a state file as Save does, for tests that set one up
// before a run.
func writeSynced(path string, b []byte) error { return fsutil.WriteFileAtomic(path, b) }
