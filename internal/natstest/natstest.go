// Package natstest runs a NATS server with JetStream inside a test
// process: file storage under a temporary directory, listening on
// 127.0.0.1 at a random port, shut down when the test ends. A test can
// stop and restart it on the same port and store directory, so clients
// reconnect to it and file-stored streams survive, as after a restart of
// a real server under load.
//
// It is internal: tests of isb/jetstream, watermark/jskv and e2e use it;
// no user imports it.
package natstest

import (
	"fmt"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Server is an embedded NATS server with JetStream. Its methods are safe
// for concurrent use (a test may restart it while other goroutines load
// it), except that Start's options are fixed once it returns.
type Server struct {
	t      testing.TB
	dir    string
	adjust func(*server.Options)
	// name, cluster and routes are set for a member of a Cluster; cluster
	// is the cluster's name, "" for a server alone.
	name    string
	cluster string
	routes  []*url.URL

	mu          sync.Mutex
	port        int // chosen by the first start, kept by restarts
	clusterPort int // likewise, for the routes of a Cluster member
	srv         *server.Server
}

// Option configures Start.
type Option func(*Server)

// Dir stores JetStream data under dir instead of a new temporary
// directory: a test that restarts a server of its own on data another one
// left uses it.
func Dir(dir string) Option { return func(s *Server) { s.dir = dir } }

// ServerOptions lets f change the server's options (users and their
// permissions, say) before every start; Host, Port, JetStream and StoreDir
// are set already and should stay.
func ServerOptions(f func(*server.Options)) Option { return func(s *Server) { s.adjust = f } }

// Start starts a server and registers its shutdown with t's cleanup. It
// fails t when the server does not start.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{t: t}
	for _, o := range opts {
		o(s)
	}
	if s.dir == "" {
		s.dir = t.TempDir()
	}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// start starts the server on s.port (a random free port the first time).
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return nil
	}
	opts := &server.Options{
		ServerName: s.name,
		Host:       "127.0.0.1",
		Port:       orRandom(s.port),
		JetStream:  true,
		StoreDir:   s.dir,
		NoLog:      true,
		NoSigs:     true,
	}
	if s.cluster != "" {
		opts.Cluster = server.ClusterOpts{Name: s.cluster, Host: "127.0.0.1", Port: orRandom(s.clusterPort)}
		opts.Routes = s.routes
	}
	if s.adjust != nil {
		s.adjust(opts)
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("natstest: new server: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return fmt.Errorf("natstest: the embedded NATS server on port %d (-1: random) did not become ready in 30s", opts.Port)
	}
	s.srv = srv
	s.port = srv.Addr().(*net.TCPAddr).Port
	if s.cluster != "" {
		s.clusterPort = srv.ClusterAddr().Port
	}
	return nil
}

// orRandom is port, or a random free one for 0.
func orRandom(port int) int {
	if port == 0 {
		return server.RANDOM_PORT
	}
	return port
}

// Stop shuts the server down and waits until it has; stopping a stopped
// server does nothing. Clients keep trying to reconnect until Restart.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return
	}
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
	s.srv = nil
}

// Resume starts a stopped server again on the same port and store
// directory; on a running server it does nothing.
func (s *Server) Resume() error { return s.start() }

// Restart stops the server and starts it again on the same port and store
// directory. It returns an error rather than failing the test, so that a
// goroutine other than the test's may call it.
func (s *Server) Restart() error {
	s.Stop()
	return s.start()
}

// Running reports whether the server is up.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv != nil
}

// Dir is the JetStream store directory.
func (s *Server) Dir() string { return s.dir }

// URL is the client URL, stable across restarts.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("nats://127.0.0.1:%d", s.port)
}

// ConnectOptions are the options Connect uses before its own: reconnect
// forever, 20 ms apart, with the reconnect buffer nats.go defaults to
// (publishes made while disconnected are sent on reconnect), and
// asynchronous errors dropped (the client's default prints them).
func ConnectOptions() []nats.Option {
	return []nats.Option{
		nats.MaxReconnects(-1),
		nats.ReconnectWait(20 * time.Millisecond),
		nats.ReconnectJitter(0, 0),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
	}
}

// Connect opens a connection to the server with ConnectOptions and opts,
// closed when the test ends. It fails the test on an error.
func (s *Server) Connect(opts ...nats.Option) *nats.Conn {
	s.t.Helper()
	nc, err := nats.Connect(s.URL(), append(ConnectOptions(), opts...)...)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(nc.Close)
	return nc
}
