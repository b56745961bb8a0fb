package envelope_test

import (
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/forwarder"
	"github.com/runnel-dev/runnel/internal/envelope"
	"github.com/runnel-dev/runnel/isb/codec"
	"github.com/runnel-dev/runnel/vertex"
)

type order struct {
	Item  string
	Count int
}

// envelopeSamples are messages every envelope test encodes: each field
// alone and all together, control messages, extreme times.
func envelopeSamples() []vertex.Message[order] {
	t0 := time.Date(2026, 11, 30, 18, 0, 0, 123456789, time.UTC)
	return []vertex.Message[order]{
		{},
		{ID: "1"},
		{ID: "ümlaut-✓", Value: order{"tea", 3}},
		{EventTime: t0},
		{EventTime: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)},
		{EventTime: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
		{EventTime: time.Unix(-1, 5).UTC()},
		{Keys: []string{"k1"}, Tags: []string{"a", "b", ""}},
		{Keys: []string{"", "k2", strings.Repeat("x", 300)}},
		{Headers: map[string]string{"b": "2", "a": "1", "": ""}},
		{Tags: []string{forwarder.ControlTag}},
		{Tags: []string{vertex.DropTag, forwarder.ControlTag, "user"}},
		{ID: "all", EventTime: t0, Keys: []string{"k"}, Tags: []string{"t"},
			Headers: map[string]string{"trace": "abc"}, Value: order{"coffee", 1 << 40}},
	}
}

func envCodec() codec.Codec[vertex.Message[order]] {
	return envelope.Codec(codec.JSON[order]())
}

// sameMessage compares what the envelope stores: everything but the
// reader's Watermark and Late, times by Equal.
func sameMessage(a, b vertex.Message[order]) bool {
	return a.ID == b.ID && a.EventTime.Equal(b.EventTime) && a.Value == b.Value &&
		slicesEqual(a.Keys, b.Keys) && slicesEqual(a.Tags, b.Tags) && mapsEqual(a.Headers, b.Headers)
}

// slicesEqual treats nil and empty alike: the envelope decodes both as nil.
func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestEnvelopeRoundTrip(t *testing.T) {
	c := envCodec()
	if got, want := c.Name(), "envelope1+json"; got != want {
		t.Fatalf("Name() = %q, want %q", got, want)
	}
	for i, m := range envelopeSamples() {
		// The reader's fields are set and must not survive.
		m.Watermark = time.Unix(100, 0)
		m.Late = true
		b, err := c.Append([]byte("prefix"), m)
		if err != nil {
			t.Fatalf("sample %d: Append: %v", i, err)
		}
		if string(b[:6]) != "prefix" {
			t.Fatalf("sample %d: Append overwrote dst", i)
		}
		// Decode into a message holding another one's fields: every field
		// must be replaced.
		got := vertex.Message[order]{ID: "stale", Keys: []string{"stale"}, Watermark: time.Unix(1, 0), Late: true, Value: order{"stale", 9}}
		if err := c.Decode(b[6:], &got); err != nil {
			t.Fatalf("sample %d: Decode: %v", i, err)
		}
		if !sameMessage(got, m) {
			t.Errorf("sample %d: round trip\n got %+v\nwant %+v", i, got, m)
		}
		if !got.Watermark.IsZero() || got.Late {
			t.Errorf("sample %d: the reader's fields were stored: watermark %v late %v", i, got.Watermark, got.Late)
		}
		if len(m.Tags) > 0 && !reflect.DeepEqual(got.Tags, m.Tags) {
			t.Errorf("sample %d: tags %q, want exactly %q", i, got.Tags, m.Tags)
		}
		// Decoding must not keep src: overwrite it and look again.
		for k := range b {
			b[k] = 0xff
		}
		if !sameMessage(got, m) {
			t.Errorf("sample %d: decoded message changed when the source bytes were overwritten", i)
		}
	}
}

func TestEnvelopeLayout(t *testing.T) {
	// The drawn format, byte for byte, for one message: a change of the
	// encoding must change envelope.Version, and this test.
	m := vertex.Message[order]{ID: "x", EventTime: time.Unix(2, 3), Tags: []string{"t"}, Value: order{"a", 1}}
	b, err := envCodec().Append(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	val := `{"Item":"a","Count":1}`
	meta := []byte{4, 3, 1, 'x', 0, 1, 1, 't', 0} // secs 2 zigzag, nanos 3, ID, 0 keys, 1 tag, 0 headers
	want := append([]byte{1, 1, byte(len(meta))}, meta...)
	want = append(want, byte(len(val)))
	want = append(want, val...)
	if string(b) != string(want) {
		t.Fatalf("encoding\n got % x\nwant % x", b, want)
	}
}

func TestEnvelopeTruncation(t *testing.T) {
	c := envCodec()
	for i, m := range envelopeSamples() {
		b, err := c.Append(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		// Every proper prefix is refused as an envelope error: none decodes
		// as a shorter message.
		for n := range len(b) {
			var got vertex.Message[order]
			err := c.Decode(b[:n], &got)
			var ee *envelope.Error
			if !errors.As(err, &ee) || !errors.Is(err, envelope.ErrInvalid) || !errors.Is(err, codec.ErrDecode) {
				t.Fatalf("sample %d cut to %d of %d bytes: err %v, want an *envelope.Error", i, n, len(b), err)
			}
			if ee.Offset < 0 || ee.Offset > n {
				t.Fatalf("sample %d cut to %d: error offset %d outside the input", i, n, ee.Offset)
			}
		}
	}
}

func TestEnvelopeCorruption(t *testing.T) {
	c := envCodec()
	good, err := c.Append(nil, vertex.Message[order]{ID: "id", EventTime: time.Unix(5, 0), Keys: []string{"k"}, Tags: []string{"t"}, Headers: map[string]string{"h": "v"}, Value: order{"a", 1}})
	if err != nil {
		t.Fatal(err)
	}
	// good's layout: version, flags, meta length, then meta from byte 3.
	metaLen := int(good[2])
	set := func(at int, v byte) []byte {
		b := append([]byte(nil), good...)
		b[at] = v
		return b
	}
	// A meta section of raw bytes, with the value "1" after it.
	withMeta := func(flags byte, meta ...byte) []byte {
		b := append([]byte{1, flags, byte(len(meta))}, meta...)
		return append(b, 1, '1')
	}
	intCodec := envelope.Codec(codec.JSON[int]())
	cases := []struct {
		name   string
		in     []byte
		reason string
		offset int
	}{
		{"future version", set(0, 2), "version 2 is not supported", 0},
		{"version zero", set(0, 0), "version 0 is not supported", 0},
		{"unknown flag", set(1, 0x81), "unknown flags 0x80", 1},
		{"meta longer than input", set(2, 0x7f), "truncated: meta length 127", 3},
		{"meta length overflows", append([]byte{1, 0}, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), "meta length overflows", 2},
		{"value shorter than its length", good[:len(good)-1], "value length", 3 + metaLen + 1},
		{"trailing byte", append(append([]byte(nil), good...), 0), "value length", 3 + metaLen + 1},
		{"value not JSON", func() []byte { b := append([]byte(nil), good...); b[len(b)-1] = '!'; return b }(), "value (codec json)", 3 + metaLen + 1},
		{"nanoseconds out of range", withMeta(1, 0, 0x80, 0x94, 0xeb, 0xdc, 0x03, 0, 0, 0, 0), "nanoseconds 1000000000 out of range", 4},
		{"key count beyond the section", withMeta(0, 0, 9, 0, 0, 0), "key count 9, but only 3 bytes are left", 4},
		{"tag longer than the section", withMeta(0, 0, 0, 1, 5, 'a', 0), "truncated: tag of 5 bytes, 2 left", 6},
		{"header count beyond the section", withMeta(0, 0, 0, 0, 2, 1, 'a'), "header count 2, but only 2 bytes are left", 6},
		{"duplicate header", withMeta(0, 0, 0, 0, 2, 1, 'a', 0, 1, 'a', 0), "header \"a\" appears twice", 13},
		{"bytes after the headers", withMeta(0, 0, 0, 0, 0, 7), "1 bytes after the headers", 7},
		{"event time flag without a time", withMeta(1), "truncated: event time seconds missing", 3},
		{"wrong value type", func() []byte {
			b, _ := intCodec.Append(nil, vertex.Message[int]{Value: 7})
			b = append(b[:len(b)-2], 3, '"', 'x', '"') // value "x", a string
			return b
		}(), "value (codec json)", 8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.name == "wrong value type" {
				var m vertex.Message[int]
				err = intCodec.Decode(tc.in, &m)
			} else {
				m := vertex.Message[order]{ID: "stale"}
				err = c.Decode(tc.in, &m)
				if err != nil && (m.ID != "" || m.Keys != nil) {
					t.Errorf("a failed decode left fields: %+v", m)
				}
			}
			var ee *envelope.Error
			if !errors.As(err, &ee) {
				t.Fatalf("err = %v, want an *envelope.Error", err)
			}
			if !strings.Contains(ee.Reason, tc.reason) || ee.Offset != tc.offset {
				t.Errorf("error %q at byte %d, want %q at byte %d", ee.Reason, ee.Offset, tc.reason, tc.offset)
			}
		})
	}
}

func TestEnvelopeEncodeError(t *testing.T) {
	c := envelope.Codec(codec.JSON[func()]())
	dst := []byte("keep")
	out, err := c.Append(dst, vertex.Message[func()]{ID: "x", Value: func() {}})
	if !errors.Is(err, codec.ErrEncode) {
		t.Fatalf("err = %v, want codec.ErrEncode", err)
	}
	if string(out) != "keep" {
		t.Fatalf("a failed Append returned %q, want dst unchanged", out)
	}
}

// FuzzEnvelopeDecode feeds the decoder arbitrary bytes: it must never panic,
// and what it accepts must encode back to a message that decodes the same.
// The seed corpus is the encoding of every sample and some damaged ones.
//
//	go test -run '^$' -fuzz FuzzEnvelopeDecode -parallel 1 ./internal/envelope
func FuzzEnvelopeDecode(f *testing.F) {
	c := envCodec()
	for _, m := range envelopeSamples() {
		b, err := c.Append(nil, m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte{})
	f.Add([]byte{1, 1, 10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add(binary.AppendUvarint([]byte{1, 0}, 1<<62))
	f.Fuzz(func(t *testing.T, in []byte) {
		var m vertex.Message[order]
		if err := c.Decode(in, &m); err != nil {
			if !errors.Is(err, envelope.ErrInvalid) {
				t.Fatalf("error %v is not an envelope error", err)
			}
			return
		}
		b, err := c.Append(nil, m)
		if err != nil {
			t.Fatalf("re-encode of an accepted message: %v", err)
		}
		var again vertex.Message[order]
		if err := c.Decode(b, &again); err != nil {
			t.Fatalf("decode of the re-encoding: %v", err)
		}
		if !sameMessage(again, m) {
			t.Fatalf("re-encoding changed the message\nfirst  %+v\nsecond %+v", m, again)
		}
	})
}

func BenchmarkEnvelope(b *testing.B) {
	c := envelope.Codec(codec.JSON[int64]())
	m := vertex.Message[int64]{ID: "123456", EventTime: time.Now(), Value: 123456}
	buf, _ := c.Append(nil, m)
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		dst := make([]byte, 0, 128)
		for b.Loop() {
			dst, _ = c.Append(dst[:0], m)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		var out vertex.Message[int64]
		for b.Loop() {
			_ = c.Decode(buf, &out)
		}
	})
}
