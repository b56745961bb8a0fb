package jetstream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/runnel-dev/runnel/internal/crc32c"
)

// frameOf is the frame of items.
func frameOf(items ...string) []byte {
	var payload []byte
	var ends []int
	for _, it := range items {
		payload = append(payload, it...)
		ends = append(ends, len(payload))
	}
	return appendFrame(nil, payload, ends)
}

// withSum replaces the checksum of a frame body (everything but its last
// four bytes): damage that the checksum does not catch, to reach the
// checks behind it.
func withSum(body []byte) []byte {
	return binary.BigEndian.AppendUint32(bytes.Clone(body), crc32c.Checksum(body))
}

func TestFrameRoundTrip(t *testing.T) {
	for _, items := range [][]string{{"a"}, {""}, {"", "", ""}, {"one", "", "three", string(make([]byte, 300))}} {
		data := frameOf(items...)
		var f frame
		if err := parseFrame(data, &f); err != nil {
			t.Fatalf("frame of %q: %v", items, err)
		}
		if f.count() != len(items) {
			t.Fatalf("frame of %q holds %d items", items, f.count())
		}
		for i, it := range items {
			if got := string(f.item(i)); got != it {
				t.Fatalf("item %d of %q = %q", i, items, got)
			}
		}
		if size := frameSize(sum(items), lensOf(items), len(items)); size != len(data) {
			t.Fatalf("frameSize of %q = %d, the frame has %d bytes", items, size, len(data))
		}
	}
}

func sum(items []string) int {
	n := 0
	for _, it := range items {
		n += len(it)
	}
	return n
}

func lensOf(items []string) int {
	n := 0
	for _, it := range items {
		n += uvarintLen(uint64(len(it)))
	}
	return n
}

// Truncation and corruption: every case is refused with ErrFrame, never
// read as other items.
func TestFrameDamage(t *testing.T) {
	good := frameOf("alpha", "beta", "gamma")
	body := good[:len(good)-4]
	flip := func(i int) []byte {
		d := bytes.Clone(good)
		d[i] ^= 0x40
		return d
	}
	tooMany := withSum(binary.AppendUvarint([]byte{frameVersion}, MaxFrameItems+1))
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"one byte", good[:1]},
		{"cut inside the lengths", good[:3]},
		{"cut inside the items", good[:len(good)-6]},
		{"checksum cut", good[:len(good)-1]},
		{"no checksum", body},
		{"a flipped version", flip(0)},
		{"a flipped count", flip(1)},
		{"a flipped length", flip(2)},
		{"a flipped item byte", flip(len(good) - 6)},
		{"a flipped checksum", flip(len(good) - 1)},
		{"a byte more", append(bytes.Clone(good), 0)},
		{"JSON of one item", []byte(`{"producer":0,"seq":1}`)},
		{"another version", withSum(append([]byte{2}, body[1:]...))},
		{"count 0", withSum([]byte{frameVersion, 0})},
		{"count past MaxFrameItems", tooMany},
		{"lengths past the items", withSum(append([]byte{frameVersion, 1, 9}, "abc"...))},
		{"items past the lengths", withSum(append([]byte{frameVersion, 1, 2}, "abc"...))},
		{"a length without its end", withSum([]byte{frameVersion, 1, 0x80})},
	} {
		var f frame
		if err := parseFrame(c.data, &f); !errors.Is(err, ErrFrame) {
			t.Errorf("%s: parseFrame = %v; want ErrFrame", c.name, err)
		}
	}
}

// FuzzFrame: a frame made of any items parses back to them, and any bytes
// either parse to items that lie inside the frame, in order and covering
// its payload exactly, or fail with ErrFrame; nothing panics.
func FuzzFrame(f *testing.F) {
	f.Add(frameOf("a", "bc", ""), 0)
	f.Add(frameOf(string(make([]byte, 200))), 3)
	f.Add([]byte{frameVersion, 1, 0, 0, 0, 0, 0}, 1)
	f.Add([]byte(`{"seq":1}`), 2)
	f.Fuzz(func(t *testing.T, data []byte, cut int) {
		// Items cut out of data round-trip.
		var items []string
		for rest := data; len(rest) > 0 && len(items) < 64; {
			n := min(len(rest), 1+(cut&0xff+len(items))%7)
			items, rest = append(items, string(rest[:n])), rest[n:]
		}
		if len(items) > 0 {
			var fr frame
			if err := parseFrame(frameOf(items...), &fr); err != nil || fr.count() != len(items) {
				t.Fatalf("frame of %q: %d items, %v", items, fr.count(), err)
			}
			for i := range items {
				if string(fr.item(i)) != items[i] {
					t.Fatalf("item %d = %q, want %q", i, fr.item(i), items[i])
				}
			}
		}
		// data itself is a frame or ErrFrame.
		var fr frame
		err := parseFrame(data, &fr)
		if err != nil {
			if !errors.Is(err, ErrFrame) {
				t.Fatalf("parseFrame: %v, not ErrFrame", err)
			}
			return
		}
		if fr.count() < 1 || fr.count() > MaxFrameItems {
			t.Fatalf("frame of %d items", fr.count())
		}
		prev := fr.starts[0]
		for i := range fr.count() {
			if fr.starts[i] != prev || fr.ends[i] < fr.starts[i] || fr.ends[i] > len(data)-4 {
				t.Fatalf("item %d at [%d, %d) in a frame of %d bytes", i, fr.starts[i], fr.ends[i], len(data))
			}
			prev = fr.ends[i]
		}
		if prev != len(data)-4 {
			t.Fatalf("items end at %d, the checksum starts at %d", prev, len(data)-4)
		}
	})
}

// Offsets of a packed stream: join and split are inverse, and the end of a
// full frame is the next frame's first offset.
func TestFrameOffsets(t *testing.T) {
	for _, c := range []struct {
		seq uint64
		idx int
	}{{1, 0}, {1, 5}, {2, 0}, {70000, MaxFrameItems - 1}, {1 << 40, 3}} {
		off := join(c.seq, c.idx, frameShift)
		if s, i := split(off, frameShift); s != c.seq || i != c.idx {
			t.Fatalf("split(join(%d, %d)) = %d, %d", c.seq, c.idx, s, i)
		}
	}
	if join(3, MaxFrameItems, frameShift) != join(4, 0, frameShift) {
		t.Fatal("the end of a full frame is not the next frame's first offset")
	}
	if s, i := split(41, 0); s != 42 || i != 0 {
		t.Fatalf("unpacked split(41) = %d, %d; want sequence 42", s, i)
	}
}
