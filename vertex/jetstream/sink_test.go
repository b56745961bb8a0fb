package jetstream

import (
	"context"
	"errors"
	"testing"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/vertex"
)

// A message NATS cannot carry goes to the fallback with ErrHeader as its
// cause; a subject SubjectOf gets wrong, with ErrSubject; the others of
// the batch are stored.
func TestSinkRefusesWhatNATSCannotCarry(t *testing.T) {
	srv := natstest.Start(t)
	nc := srv.Connect()
	js := newJS(t, nc)
	createStream(t, js, "out")
	sink, err := NewSink(SinkConfig{Conn: nc, SubjectOf: func(m *vertex.Message[[]byte]) string { return "out" + m.Headers["sub"] }})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	msgs := []vertex.Message[[]byte]{
		{ID: "a", Value: []byte("ok")},
		{ID: "b", Keys: []string{"line\nbreak"}},
		{ID: "c", Headers: map[string]string{"sub": ".*"}},
	}
	res, err := sink.Write(context.Background(), msgs)
	var we *vertex.WriteError
	if !errors.As(err, &we) || len(res) != 3 {
		t.Fatalf("got %v, %v; want results and a *vertex.WriteError", res, err)
	}
	if res[0] != vertex.ResultOK || res[1] != vertex.ResultFallback || res[2] != vertex.ResultFallback {
		t.Fatalf("results %v, want ok, fallback, fallback", res)
	}
	if !errors.Is(we.Causes[1], ErrHeader) || !errors.Is(we.Causes[2], ErrSubject) {
		t.Fatalf("causes %v, want ErrHeader and ErrSubject", we.Causes)
	}
	if got := readStream(t, js, "out"); len(got) != 1 || string(got[0].Data()) != "ok" {
		t.Fatalf("the stream holds %d messages, want the one that could be carried", len(got))
	}
}
