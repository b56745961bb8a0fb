package keys

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"testing"
)

// TestHashPinned pins the hash of fixed key lists. These values must never
// change: a reduce's input is routed by them, so a new seed, another hash
// or another encoding would send a key's messages after an upgrade to
// another partition and replica than its open windows.
func TestHashPinned(t *testing.T) {
	for _, c := range []struct {
		keys []string
		hash uint64
		// spread over 2 and 3 workers
		two, three int
	}{
		{nil, 0xcbf29ce484222325, 0, 2},
		{[]string{""}, 0xaf63bd4c8601b7df, 1, 0},
		{[]string{"", ""}, 0x8328807b4eb6fed, 1, 2},
		{[]string{"a"}, 0x82f4307b4e8c4d7, 0, 0},
		{[]string{"a", "b"}, 0xcb005d77e97d7b40, 0, 0},
		{[]string{"a\x00b"}, 0x35575b89cfeaa8cb, 0, 0},
		{[]string{"k0"}, 0xea51ce18759ca92e, 1, 0},
		{[]string{"user:42", "eu"}, 0x9dad41f9491f3de9, 1, 0},
	} {
		h := Hash(c.keys)
		if h != c.hash {
			t.Errorf("Hash(%q) = %#x, want %#x", c.keys, h, c.hash)
		}
		if two, three := Spread(h, 2), Spread(h, 3); two != c.two || three != c.three {
			t.Errorf("Spread(Hash(%q)) over 2 and 3 = %d, %d; want %d, %d", c.keys, two, three, c.two, c.three)
		}
	}
}

// TestHashIsFNV1aOfEncoding checks the documented format against the
// standard library: FNV-1a 64 of each key's uvarint length and bytes, also
// for keys whose length takes two and three varint bytes.
func TestHashIsFNV1aOfEncoding(t *testing.T) {
	lists := [][]string{nil, {""}, {"x"}, {strings.Repeat("x", 200)}, {strings.Repeat("y", 20000), "z"}}
	for i := range 50 {
		lists = append(lists, strings.Split(strings.Repeat(fmt.Sprintf("k%d,", i), i%7), ","))
	}
	for _, l := range lists {
		var enc []byte
		for _, k := range l {
			enc = binary.AppendUvarint(enc, uint64(len(k)))
			enc = append(enc, k...)
		}
		if got := Append(nil, l); !bytes.Equal(got, enc) {
			t.Fatalf("Append(%.40q) = %x, want %x", l, got, enc)
		}
		f := fnv.New64a()
		f.Write(enc)
		if got := Hash(l); got != f.Sum64() {
			t.Fatalf("Hash(%.40q) = %#x, want FNV-1a of the encoding %#x", l, got, f.Sum64())
		}
		if got := String(string(enc)); got != f.Sum64() {
			t.Fatalf("String(encoding of %.40q) = %#x, want %#x", l, got, f.Sum64())
		}
	}
}

// Lists a separator would join into one string encode apart.
func TestAppendUnambiguous(t *testing.T) {
	lists := [][]string{nil, {""}, {"", ""}, {"a", "b"}, {"a\x00b"}, {"ab"}, {"a", "", "b"}, {"\x01a"}, {"\x01a\x01b"}}
	seen := map[string][]string{}
	for _, l := range lists {
		e := string(Append(nil, l))
		if prev, ok := seen[e]; ok {
			t.Errorf("%q and %q both encode as %x", prev, l, e)
		}
		seen[e] = l
	}
}

func TestSpreadInRange(t *testing.T) {
	for n := 1; n < 9; n++ {
		hit := make([]int, n)
		for i := range 1000 {
			// Keys of one partition of 2: only even hashes, the case
			// Spread is for.
			h := Hash([]string{fmt.Sprint(i)})
			if h%2 != 0 {
				continue
			}
			w := Spread(h, n)
			if w < 0 || w >= n {
				t.Fatalf("Spread over %d = %d", n, w)
			}
			hit[w]++
		}
		for w, c := range hit {
			if c == 0 {
				t.Errorf("Spread over %d: worker %d got none of the keys of one partition", n, w)
			}
		}
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	for _, ks := range [][]string{nil, {""}, {"a", "b"}, {"a\x00b"}, {strings.Repeat("x", 300), "", "y"}} {
		got, ok := Decode(string(Append(nil, ks)))
		if !ok || !slices.Equal(got, ks) {
			t.Errorf("Decode(Append(%q)) = %q, %v", ks, got, ok)
		}
	}
	for _, bad := range []string{"\x02a", "\x80", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "\x01a\x05", "\x80\x00"} {
		if got, ok := Decode(bad); ok {
			t.Errorf("Decode(%q) = %q, true; want false", bad, got)
		}
	}
}

// FuzzDecode: Decode never panics, and what it accepts encodes back to
// its input.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{"", "\x00", "\x01a\x01b", "\x03a\x00b", "\x80\x01", "\x05ab"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, enc string) {
		ks, ok := Decode(enc)
		if ok && string(Append(nil, ks)) != enc {
			t.Fatalf("Decode(%q) = %q, which encodes as %q", enc, ks, Append(nil, ks))
		}
	})
}
