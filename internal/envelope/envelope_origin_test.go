package envelope_test

import (
	"errors"
	"testing"

	"github.com/runnel-dev/runnel/internal/envelope"
	"github.com/runnel-dev/runnel/internal/origin"
	"github.com/runnel-dev/runnel/vertex"
)

// TestEnvelopeOrigin: a message the runtime gave an origin encodes it, a
// decode reads it back only into an origin the message points to (the
// restart scan's), resets that origin for a record without one, and
// leaves every other field as without an origin; a plain decode skips it,
// so a message read never carries one.
func TestEnvelopeOrigin(t *testing.T) {
	c := envCodec()
	want := origin.Origin{Writer: "split", Partition: 3, Offset: 1 << 40, Index: 1}
	for i, m := range envelopeSamples() {
		o := want
		*origin.Of(&m) = &o
		with, err := c.Append(nil, m)
		if err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
		*origin.Of(&m) = nil
		without, err := c.Append(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		if len(with) <= len(without) {
			t.Fatalf("sample %d: %d bytes with an origin, %d without", i, len(with), len(without))
		}
		var plain vertex.Message[order]
		if err := c.Decode(with, &plain); err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
		if !sameMessage(plain, m) || *origin.Of(&plain) != nil {
			t.Fatalf("sample %d: plain decode %+v (origin %v), want %+v and no origin", i, plain, *origin.Of(&plain), m)
		}
		var scanned vertex.Message[order]
		slot := &origin.Origin{Writer: "stale", Offset: 7}
		*origin.Of(&scanned) = slot
		if err := c.Decode(with, &scanned); err != nil {
			t.Fatal(err)
		}
		if !sameMessage(scanned, m) || *origin.Of(&scanned) != slot || *slot != want {
			t.Fatalf("sample %d: scan decode origin %+v, want %+v in the caller's slot", i, *slot, want)
		}
		if err := c.Decode(without, &scanned); err != nil {
			t.Fatal(err)
		}
		if *origin.Of(&scanned) != slot || *slot != (origin.Origin{}) {
			t.Fatalf("sample %d: scan decode of a record without an origin left %+v, want the zero origin", i, *slot)
		}
	}
	// A truncated origin is an envelope error, as any truncated field.
	m := vertex.Message[order]{ID: "x"}
	*origin.Of(&m) = &want
	b, err := c.Append(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	// Cut inside the origin (version, flags, then the origin's writer
	// length and "split"): an envelope error, as any truncated field.
	for _, n := range []int{2, 3, 5, 8, 9} {
		var got vertex.Message[order]
		if err := c.Decode(b[:n], &got); !errors.Is(err, envelope.ErrInvalid) {
			t.Fatalf("decode of the first %d bytes: %v, want ErrInvalid", n, err)
		}
	}
}
