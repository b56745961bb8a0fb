package nats

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/vertex"
)

// A message NATS cannot carry goes to the fallback with ErrHeader as its
// cause; a subject SubjectOf gets wrong, with ErrSubject; the others of
// the batch are published.
func TestSinkRefusesWhatNATSCannotCarry(t *testing.T) {
	srv := natstest.Start(t)
	nc := srv.Connect()
	sub, err := nc.SubscribeSync("out")
	if err != nil {
		t.Fatal(err)
	}
	sink, err := NewSink(SinkConfig{Conn: nc, SubjectOf: func(m *vertex.Message[[]byte]) string { return "out" + m.Headers["sub"] }})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	msgs := []vertex.Message[[]byte]{
		{ID: "a", Value: []byte("ok")},
		{ID: "b", Headers: map[string]string{"bad name": "v"}},
		{ID: "c", Headers: map[string]string{"sub": "..x"}},
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
	m, err := sub.NextMsg(5 * time.Second)
	if err != nil || string(m.Data) != "ok" {
		t.Fatalf("got %v, %v; want the message that could be carried", m, err)
	}
	if n, _, _ := sub.Pending(); n != 0 {
		t.Fatalf("%d more messages published", n)
	}
}
