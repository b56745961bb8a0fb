package natstest_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/runnel-dev/runnel/internal/natstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A file-stored stream survives a restart on the same store directory, and
// a connection opened before the restart reconnects to the same URL.
func TestRestartKeepsStreams(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := natstest.Start(t)
	url := s.URL()
	nc := s.Connect()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := js.Publish(ctx, "s", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.URL() != url || !s.Running() {
		t.Fatalf("after the restart the server runs %v at %s; want true at %s", s.Running(), s.URL(), url)
	}
	var last error
	for ctx.Err() == nil { // the connection reconnects within a few ReconnectWaits
		st, err := js.Stream(ctx, "S")
		if err == nil {
			if n := st.CachedInfo().State.Msgs; n != 3 {
				t.Fatalf("stream holds %d messages after the restart; want 3", n)
			}
			return
		}
		last = err
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("stream not reachable after the restart: %v", last)
}
