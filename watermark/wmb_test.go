package watermark

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"time"
)

func TestWMBRoundTrip(t *testing.T) {
	cases := []WMB{
		{},
		{Offset: 42, Watermark: ms(1_700_000_000_123), Partition: 3},
		{Offset: math.MaxInt64, Watermark: time.Unix(0, math.MaxInt64).UTC(), Idle: true, Partition: math.MaxInt32},
		{Offset: 7, Watermark: time.Unix(0, math.MinInt64+1).UTC(), Idle: true},
		{Offset: 1, Watermark: time.Unix(5, 123456789).UTC()},
	}
	for _, w := range cases {
		b, err := w.MarshalBinary()
		if err != nil {
			t.Fatalf("%v: %v", w, err)
		}
		if len(b) != wmbSize {
			t.Fatalf("%v: %d bytes, want %d", w, len(b), wmbSize)
		}
		var got WMB
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("%v: decode: %v", w, err)
		}
		if got != w {
			t.Fatalf("round trip: got %v, want %v", got, w)
		}
	}
}

func TestWMBEncodingIsFixed(t *testing.T) {
	w := WMB{Offset: 0x0102030405060708, Watermark: time.Unix(0, 0x1112131415161718), Idle: true, Partition: 0x21222324}
	b, err := w.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{1, 1, 0x21, 0x22, 0x23, 0x24, 1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18}
	if !bytes.Equal(b, want) {
		t.Fatalf("encoding = % x, want % x", b, want)
	}
}

func TestWMBEncodeErrors(t *testing.T) {
	cases := map[string]WMB{
		"negative offset":    {Offset: -1},
		"negative partition": {Partition: -2},
		"before 1678":        {Watermark: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)},
		"after 2262":         {Watermark: time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)},
		"the sentinel":       {Watermark: time.Unix(0, math.MinInt64)},
	}
	for name, w := range cases {
		if _, err := w.MarshalBinary(); !errors.Is(err, ErrRange) {
			t.Errorf("%s: err = %v, want ErrRange", name, err)
		}
	}
}

func TestWMBDecodeErrors(t *testing.T) {
	good, _ := WMB{Offset: 1, Partition: 1}.MarshalBinary()
	mutate := func(i int, v byte) []byte { b := bytes.Clone(good); b[i] = v; return b }
	cases := map[string]struct {
		in   []byte
		want string
	}{
		"empty":           {nil, "watermark: cannot decode: WMB: empty input"},
		"version 2":       {mutate(0, 2), "watermark: cannot decode: WMB: unknown version 2 (this build reads 1)"},
		"short":           {good[:21], "watermark: cannot decode: WMB: 21 bytes, want 22"},
		"long":            {append(bytes.Clone(good), 0), "watermark: cannot decode: WMB: 23 bytes, want 22"},
		"flags":           {mutate(1, 2), "watermark: cannot decode: WMB: unknown flags 0x02"},
		"negative part":   {mutate(2, 0x80), "watermark: cannot decode: WMB: negative partition -2147483647"},
		"negative offset": {mutate(6, 0x80), "watermark: cannot decode: WMB: negative offset -9223372036854775807"},
	}
	for name, c := range cases {
		w := WMB{Offset: 99}
		err := w.UnmarshalBinary(c.in)
		if !errors.Is(err, ErrDecode) || err.Error() != c.want {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
		}
		if w != (WMB{Offset: 99}) {
			t.Errorf("%s: failed decode changed the WMB to %v", name, w)
		}
	}
}

// FuzzWMBDecode: the decoder never panics, and whatever it accepts encodes
// back to the same bytes (the encoding is canonical).
func FuzzWMBDecode(f *testing.F) {
	for _, w := range []WMB{{}, {Offset: 5, Watermark: ms(1000), Idle: true, Partition: 2}} {
		b, _ := w.MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte{1})
	f.Add([]byte{2, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var w WMB
		if err := w.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrDecode) {
				t.Fatalf("error %v is not ErrDecode", err)
			}
			return
		}
		again, err := w.MarshalBinary()
		if err != nil {
			t.Fatalf("decoded %v does not encode: %v", w, err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoding % x, input % x", again, b)
		}
	})
}

func TestHeartbeatEncoding(t *testing.T) {
	now := ms(1_700_000_000_500)
	got, err := decodeHeartbeat(encodeHeartbeat(now))
	if err != nil || !got.Equal(now) {
		t.Fatalf("decode = %v, %v; want %v", got, err, now)
	}
	if _, err := decodeHeartbeat([]byte{1, 2}); !errors.Is(err, ErrDecode) {
		t.Fatalf("short heartbeat: err = %v, want ErrDecode", err)
	}
}
