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
		// Each attempt bounded on its own: a request sent into the
		// reconnect may never be answered, and waiting for it with the
		// test's whole context failed the test once under load.
		attempt, stop := context.WithTimeout(ctx, 2*time.Second)
		st, err := js.Stream(attempt, "S")
		stop()
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

// A cluster of three elects a meta leader and holds an R3 stream whose
// replicas are all current: a message published through one server is
// read back through a connection to another.
func TestClusterReplicates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := natstest.StartCluster(t, 3)
	if n := len(c.Servers()); n != 3 {
		t.Fatalf("%d servers; want 3", n)
	}
	first, err := jetstream.New(c.Servers()[0].Connect())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Publish(ctx, "s", []byte("x")); err != nil {
		t.Fatal(err)
	}
	last, err := jetstream.New(c.Servers()[2].Connect())
	if err != nil {
		t.Fatal(err)
	}
	st, err := last.Stream(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	info := st.CachedInfo()
	if info.Cluster == nil || len(info.Cluster.Replicas) != 2 || info.State.Msgs != 1 {
		t.Fatalf("stream S: cluster %+v, %d messages; want a leader and 2 replicas, 1 message", info.Cluster, info.State.Msgs)
	}
	msg, err := st.GetMsg(ctx, 1)
	if err != nil || string(msg.Data) != "x" {
		t.Fatalf("message 1 read through another server: %v, %v; want x", msg, err)
	}
}
