package jskv_test

import (
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/watermark/jskv"
)

// testServer is a NATS server with JetStream running inside the test
// process, listening on 127.0.0.1 only, storing under the test's temporary
// directory. It is shut down when the test ends.
type testServer struct {
	t    testing.TB
	dir  string
	port int // 0 until the first start picks one
	srv  *server.Server
}

func startServer(t testing.TB) *testServer {
	t.Helper()
	s := &testServer{t: t, dir: t.TempDir()}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// start starts the server on s.port (a random free port the first time).
func (s *testServer) start() {
	s.t.Helper()
	port := s.port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	srv, err := server.NewServer(&server.Options{
		Host:      "127.0.0.1",
		Port:      port,
		JetStream: true,
		StoreDir:  s.dir,
		NoLog:     true,
		NoSigs:    true,
	})
	if err != nil {
		s.t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		s.t.Fatal("the embedded NATS server did not start")
	}
	s.srv = srv
	s.port = srv.Addr().(*net.TCPAddr).Port
}

// stop shuts the server down and waits until it has; stopping a stopped
// server does nothing.
func (s *testServer) stop() {
	if s.srv == nil {
		return
	}
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
	s.srv = nil
}

// restart stops the server and starts it again on the same port and store
// directory, so clients reconnect to it and file-stored buckets survive.
func (s *testServer) restart() {
	s.t.Helper()
	s.stop()
	s.start()
}

func (s *testServer) url() string { return s.srv.ClientURL() }

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
