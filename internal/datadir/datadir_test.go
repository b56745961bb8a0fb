package datadir

import (
	"maps"
	"slices"
	"testing"
)

func TestParseWALPartition(t *testing.T) {
	for name, want := range map[string]int{"partition-0": 0, "partition-12": 12} {
		if p, ok := ParseWALPartition(name); !ok || p != want || WALPartition(p) != name {
			t.Errorf("ParseWALPartition(%q) = %d, %v", name, p, ok)
		}
	}
	for _, name := range []string{"partition-", "partition-01", "partition--1", "partition-x", "replica-0-of-2", "partition-1.tmp"} {
		if p, ok := ParseWALPartition(name); ok {
			t.Errorf("ParseWALPartition(%q) = %d, true; want refused", name, p)
		}
	}
}

// TestStateRoundTrip: what EncodeState frames decodes to the same state,
// anchors and version; a flipped byte anywhere is refused with its
// position (the pipeline's storage_state_test.go tests every field).
func TestStateRoundTrip(t *testing.T) {
	in := State{State: []byte("position 42"), Anchors: map[string][]int64{"a": {1, 2}, "b": {}}}
	b := EncodeState(in)
	got, off, reason := DecodeState(b)
	if reason != "" || off != 0 || got.Version != StateVersion || string(got.State) != "position 42" ||
		!maps.EqualFunc(got.Anchors, in.Anchors, slices.Equal[[]int64]) {
		t.Fatalf("DecodeState = %+v, %d, %q", got, off, reason)
	}
	b[StateHeaderSize+3] ^= 1
	if _, off, reason := DecodeState(b); off != 12 || reason == "" {
		t.Fatalf("flipped byte: %d, %q; want the checksum at byte 12", off, reason)
	}
}
