package natsmsg

import (
	"context"
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

func TestSubjectProblem(t *testing.T) {
	for s, want := range map[string]bool{"a": true, "a.b.c": true, "a.*": false, "a.>": false, "": false, "a..b": false, "a b": false, ".a": false, "a.": false} {
		if got := SubjectProblem(s, false) == ""; got != want {
			t.Errorf("literal %q: ok %v, want %v", s, got, want)
		}
	}
	for s, want := range map[string]bool{"a.*": true, "a.>": true, ">": true, "a.>.b": false, "*.b": true} {
		if got := SubjectProblem(s, true) == ""; got != want {
			t.Errorf("wildcard %q: ok %v, want %v", s, got, want)
		}
	}
}

// Take waits for a first message, then takes what is queued without
// waiting; it returns nothing when the wait passes or ctx ends.
func TestQueueTake(t *testing.T) {
	q := NewQueue[int](4)
	buf := make([]int, 3)
	if n, err := q.Take(context.Background(), time.Millisecond, buf); n != 0 || err != nil {
		t.Fatalf("empty queue: %d, %v", n, err)
	}
	for i := range 4 {
		if !q.Put(i) {
			t.Fatal("put refused")
		}
	}
	if n, _ := q.Take(context.Background(), time.Hour, buf); n != 3 || !reflect.DeepEqual(buf, []int{0, 1, 2}) {
		t.Fatalf("took %d: %v", n, buf[:n])
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, _ := q.Take(ctx, time.Hour, buf); n != 1 || buf[0] != 3 {
		t.Fatalf("took %d: %v", n, buf[:n])
	}
	if n, err := q.Take(ctx, time.Hour, buf); n != 0 || err != context.Canceled {
		t.Fatalf("cancelled: %d, %v", n, err)
	}
	q.Close()
	if q.Put(1) {
		t.Fatal("put into a closed queue")
	}
}
