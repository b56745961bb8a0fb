package natsmsg

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/vertex"
)

// A message written as headers and read back has its keys, event time
// and headers; "Nats-" headers are not written; the ID only when asked.
func TestHeaderRoundTrip(t *testing.T) {
	in := vertex.Message[[]byte]{
		ID: "s/7", EventTime: time.Date(2026, 5, 6, 7, 8, 9, 10, time.FixedZone("x", 3600)),
		Keys:    []string{"a", "", "b c"},
		Headers: map[string]string{"h": "v", "Nats-Expected-Stream": "other"},
		Value:   []byte("data"),
	}
	h, err := Header(&in, true)
	if err != nil {
		t.Fatal(err)
	}
	if h.Get("Nats-Expected-Stream") != "" || h.Get(MsgIDHeader) != "s/7" {
		t.Fatalf("headers %v", h)
	}
	var out vertex.Message[[]byte]
	ToMessage("x.y", h, in.Value, nil, &out)
	if !out.EventTime.Equal(in.EventTime) || !reflect.DeepEqual(out.Keys, in.Keys) ||
		!reflect.DeepEqual(out.Headers, map[string]string{"h": "v", MsgIDHeader: "s/7"}) || string(out.Value) != "data" {
		t.Fatalf("read back %+v from %v", out, h)
	}
	if h, err := Header(&vertex.Message[[]byte]{ID: "x"}, false); h != nil || err != nil {
		t.Fatalf("a bare message gave %v, %v", h, err)
	}
}

// What NATS cannot carry is ErrHeader, naming what.
func TestHeaderRefuses(t *testing.T) {
	for _, m := range []vertex.Message[[]byte]{
		{Keys: []string{"a\nb"}},
		{Headers: map[string]string{"a:b": "v"}},
		{Headers: map[string]string{"h": "v\r"}},
		{ID: "a\nb"},
	} {
		if _, err := Header(&m, true); !errors.Is(err, ErrHeader) {
			t.Errorf("%+v: got %v, want ErrHeader", m, err)
		}
	}
}

// An event time that does not parse stays a header; keys come from the
// subject's tokens when there is no key header.
func TestToMessageFallbacks(t *testing.T) {
	var m vertex.Message[[]byte]
	ToMessage("orders.eu.42", map[string][]string{EventTimeHeader: {"yesterday"}}, nil, []int{2, 1, 5}, &m)
	if !m.EventTime.IsZero() || m.Headers[EventTimeHeader] != "yesterday" {
		t.Fatalf("%+v", m)
	}
	if !reflect.DeepEqual(m.Keys, []string{"42", "eu", ""}) {
		t.Fatalf("keys %q", m.Keys)
	}
}
