package wal

import (
	"encoding/binary"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/crc32c"
)

// FuzzDecode feeds the entry decoder arbitrary bytes. The crc is set to
// match them (a random crc almost never does, and would stop the fuzzer at
// the first check) unless the input's first byte is 0xff, which keeps the
// bytes as they are. The decoder must not panic, must return errDamaged or
// a *VersionError on failure, and whatever it decodes must encode again to
// bytes that decode to the same entry.
func FuzzDecode(f *testing.F) {
	sealed := func(e []byte) []byte { seal(e, 42, flagBatchEnd); return e }
	m := msg(3, 77, 5)
	f.Add(sealed(appendMessage(nil, &m)))
	m2 := Entry{Partition: -1, Offset: -5, ID: "ид-\x00", Keys: []string{"", "a", "ключ"}, Windows: []Window{win(0), win(1), {Session: 9, Start: base}}}
	f.Add(sealed(appendMessage(nil, &m2)))
	f.Add(sealed(appendGC(nil, &gcEvent{watermark: base, windows: []Window{win(2), {Session: 1}}})))
	f.Add(sealed(appendGC(nil, &gcEvent{})))
	f.Add(sealed(appendCheckpoint(nil, &checkpoint{watermark: base, offsets: map[int32]int64{0: 1, 5: 1 << 40}})))
	f.Add(sealed(appendCheckpoint(nil, &checkpoint{offsets: map[int32]int64{}})))
	f.Add([]byte{})
	f.Add([]byte{0xff, 1, 2, 3, formatVersion, kindMessage})
	f.Add(append([]byte{0, 0, 0, 0, 1, kindMessage, 0}, make([]byte, 30)...))             // version 1, before message ids
	f.Add(append([]byte{0, 0, 0, 0, 3, kindMessage, 0}, make([]byte, 30)...))             // a later version
	f.Add(append([]byte{0, 0, 0, 0, formatVersion, 9, 0}, make([]byte, 30)...))           // unknown kind
	f.Add(append([]byte{0, 0, 0, 0, formatVersion, kindCheckpoint, 0}, 0xff, 0xff, 0x7f)) // huge count
	f.Fuzz(func(t *testing.T, in []byte) {
		e := append([]byte(nil), in...)
		if len(e) >= 4 && e[0] != 0xff {
			binary.LittleEndian.PutUint32(e, crc32c.Checksum(e[4:]))
		}
		var d decoder
		r, err := d.decode(e)
		if err != nil {
			var ve *VersionError
			if !errors.Is(err, errDamaged) && !errors.As(err, &ve) {
				t.Fatalf("decode error %v is neither damage nor a version error", err)
			}
			return
		}
		var again []byte
		switch r.kind {
		case kindMessage:
			again = appendMessage(nil, &r.msg)
		case kindGC:
			again = appendGC(nil, &r.gc)
		case kindCheckpoint:
			again = appendCheckpoint(nil, &r.cp)
		default:
			t.Fatalf("decoded kind %d", r.kind)
		}
		seal(again, r.batch, r.flags)
		r2, err := d.decode(again)
		if err != nil {
			t.Fatalf("re-encoded entry does not decode: %v", err)
		}
		if r2.header != r.header || !sameEntry(r2.msg, r.msg) || !sameWindows(r2.gc.windows, r.gc.windows) ||
			!r2.gc.watermark.Equal(r.gc.watermark) || !r2.cp.watermark.Equal(r.cp.watermark) || !maps.Equal(r2.cp.offsets, r.cp.offsets) {
			t.Fatalf("round trip changed the entry:\n%+v\n%+v", r, r2)
		}
	})
}

func sameWindows(a, b []Window) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Start.Equal(b[i].Start) || !a[i].End.Equal(b[i].End) || a[i].Session != b[i].Session {
			return false
		}
	}
	return true
}

// TestDecodeRejects: hand-made damage the decoder must name.
func TestDecodeRejects(t *testing.T) {
	m := msg(1, 2, 3)
	good := appendMessage(nil, &m)
	seal(good, 1, 0)
	cases := map[string][]byte{
		"short":      good[:10],
		"bad crc":    append(append([]byte{}, good[:20]...), good[21:]...),
		"no windows": func() []byte { e := appendMessage(nil, &Entry{}); seal(e, 1, 0); return e }(),
		"gc trailing bytes": func() []byte {
			e := append(appendGC(nil, &gcEvent{watermark: time.Time{}}), 1)
			seal(e, 1, 0)
			return e
		}(),
	}
	for name, e := range cases {
		var d decoder
		if _, err := d.decode(e); !errors.Is(err, errDamaged) {
			t.Errorf("%s: %v", name, err)
		}
	}
	var d decoder
	r, err := d.decode(good)
	if err != nil || !sameEntry(r.msg, m) || r.batch != 1 {
		t.Fatalf("good entry: %+v, %v", r, err)
	}
}
