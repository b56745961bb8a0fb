package jskv_test

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/watermark/jskv"
)

// testServer is the embedded NATS server with JetStream of
// internal/natstest (127.0.0.1 only, a random port, the test's temporary
// directory as its store), shut down when the test ends.
type testServer struct {
	*natstest.Server
	t testing.TB
}

func startServer(t testing.TB, opts ...natstest.Option) *testServer {
	t.Helper()
	return &testServer{Server: natstest.Start(t, opts...), t: t}
}

// stop shuts the server down; stopping a stopped server does nothing.
func (s *testServer) stop() { s.Stop() }

// restart stops the server and starts it again on the same port and store
// directory, so clients reconnect to it and file-stored buckets survive.
func (s *testServer) restart() {
	s.t.Helper()
	if err := s.Restart(); err != nil {
		s.t.Fatal(err)
	}
}

func (s *testServer) url() string { return s.URL() }

// connect opens a connection to the server, closed when the test ends.
// Asynchronous errors are dropped unless opts set an ErrorHandler (the
// client's default prints them).
func (s *testServer) connect(opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	s.t.Helper()
	opts = append([]nats.Option{nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})}, opts...)
	nc, err := nats.Connect(s.url(), opts...)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		s.t.Fatal(err)
	}
	return nc, js
}

// newStore returns a store on js, failing the test on an error.
func newStore(t testing.TB, js jetstream.JetStream, opts ...jskv.Option) *jskv.Store {
	t.Helper()
	s, err := jskv.New(js, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
