package mmap

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// record returns a framed record for payload at offset.
func record(payload string, offset int64) []byte {
	rec := make([]byte, recordSize(len(payload)))
	copy(rec[recordHeaderSize:], payload)
	frameRecord(rec, offset)
	return rec
}

// The decoder's answer for truncation, tears and corruption of a record
// inside a segment.
func TestDecodeRecordDamage(t *testing.T) {
	good := record("hello, runnel", 42)
	n := len(good)
	cases := []struct {
		name   string
		damage func(seg []byte) []byte // gets a copy: good followed by zeros
		want   int64
		ok     bool
		empty  bool
	}{
		{name: "intact", damage: func(s []byte) []byte { return s }, want: 42, ok: true},
		{name: "empty payload", damage: func(s []byte) []byte { return append(record("", 42), make([]byte, 8)...) }, want: 42, ok: true},
		{name: "never written", damage: func(s []byte) []byte { return make([]byte, 64) }, want: 42, empty: true},
		{name: "segment ends inside header", damage: func(s []byte) []byte { return s[:10] }, want: 42, empty: true},
		{name: "segment ends inside payload", damage: func(s []byte) []byte { return s[:n-6] }, want: 42},
		{name: "segment ends before end marker", damage: func(s []byte) []byte { return s[:n-1] }, want: 42},
		{name: "torn: end marker not written", damage: func(s []byte) []byte { clear(s[n-4 : n]); return s }, want: 42},
		{name: "torn: payload tail not written", damage: func(s []byte) []byte { clear(s[n-8 : n-4]); return s }, want: 42},
		{name: "torn: only the header written", damage: func(s []byte) []byte { clear(s[recordHeaderSize:n]); return s }, want: 42},
		{name: "payload bit flip", damage: func(s []byte) []byte { s[20] ^= 1; return s }, want: 42},
		{name: "crc bit flip", damage: func(s []byte) []byte { s[5] ^= 0x80; return s }, want: 42},
		{name: "length grown", damage: func(s []byte) []byte { s[0]++; return s }, want: 42},
		{name: "length shrunk", damage: func(s []byte) []byte { s[0]--; return s }, want: 42},
		{name: "length huge", damage: func(s []byte) []byte { binary.LittleEndian.PutUint32(s, 1<<31); return s }, want: 42},
		{name: "offset field damaged", damage: func(s []byte) []byte { s[8] ^= 2; return s }, want: 42},
		{name: "record of another offset", damage: func(s []byte) []byte { return s }, want: 43},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			seg := tc.damage(append(bytes.Clone(good), make([]byte, 64)...))
			payload, next, empty, reason := decodeRecord(seg, 0, tc.want)
			if ok := reason == ""; ok != tc.ok || empty != tc.empty {
				t.Fatalf("ok=%v empty=%v (%s); want ok=%v empty=%v", ok, empty, reason, tc.ok, tc.empty)
			}
			if tc.ok && next != recordSize(len(payload)) {
				t.Fatalf("next = %d, want %d", next, recordSize(len(payload)))
			}
		})
	}
}

func TestSegmentHeader(t *testing.T) {
	b := make([]byte, segmentHeaderSize)
	segmentHeader{first: 7, next: 99, size: 8192}.encode(b)
	h, reason := decodeSegmentHeader(b)
	if reason != "" || h.first != 7 || h.next != 99 || h.size != 8192 {
		t.Fatalf("decoded %+v, %q", h, reason)
	}
	for i := range segmentHeaderSize {
		c := bytes.Clone(b)
		c[i] ^= 0x10
		if _, reason := decodeSegmentHeader(c); reason == "" {
			t.Fatalf("flipping byte %d went unnoticed", i)
		}
	}
}

// FuzzDecodeRecord: arbitrary bytes never panic the decoder, and whatever
// it accepts is a well-formed record of the asked offset.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(record("hello", 3), 0, int64(3))
	f.Add(append(record("a", 0), record("bb", 1)...), recordSize(1), int64(1))
	f.Add(make([]byte, 40), 0, int64(0))
	f.Add(record("", 0)[:10], 0, int64(0))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3}, 2, int64(-1))
	f.Fuzz(func(t *testing.T, seg []byte, pos int, want int64) {
		payload, next, empty, reason := decodeRecord(seg, pos, want)
		if reason != "" {
			if payload != nil || next != 0 {
				t.Fatal("failed decode returned data")
			}
			return
		}
		if empty {
			t.Fatal("accepted and empty")
		}
		if next != pos+recordSize(len(payload)) || next > len(seg) {
			t.Fatalf("next %d for a %d-byte payload at %d in %d bytes", next, len(payload), pos, len(seg))
		}
		if re := record(string(payload), want); !bytes.Equal(re, seg[pos:next]) {
			t.Fatalf("accepted bytes differ from a framed record: %x vs %x", seg[pos:next], re)
		}
	})
}
