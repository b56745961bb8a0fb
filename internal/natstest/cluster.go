package natstest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Cluster is n embedded servers with JetStream forming one cluster, all in
// this process: each listens for clients on a random port of 127.0.0.1,
// for routes on a port of its own, and stores under a temporary directory
// of its own. Every server has routes to all the others (a JetStream
// cluster needs configured routes), so route ports are chosen before the
// servers start: each is reserved by a listener of the test, closed just
// before its server binds it. Streams and buckets with Replicas(n) are
// replicated on every server (JetStream's R3 with three).
//
// A member can be stopped and resumed (Servers): it comes back on its own
// ports and store directory and catches up, as a restarted node of a real
// cluster does.
type Cluster struct {
	t       testing.TB
	servers []*Server
}

// clusterReady bounds how long StartCluster waits for the cluster to
// elect a JetStream meta leader that every server follows.
const clusterReady = 30 * time.Second

// StartCluster starts a cluster of n servers (at least 2; 3 for R3
// streams) and registers their shutdown with t's cleanup. It returns once
// JetStream has a meta leader and every server is current with it, and
// fails t if that takes longer than 30s.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	if n < 2 {
		t.Fatalf("natstest: a cluster of %d servers; want at least 2", n)
	}
	reserved := make([]net.Listener, n)
	for i := range reserved {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("natstest: reserve a route port: %v", err)
		}
		defer l.Close() // those not handed over yet, should start fail
		reserved[i] = l
	}
	routes := make([]*url.URL, n)
	for i, l := range reserved {
		routes[i] = &url.URL{Scheme: "nats-route", Host: l.Addr().String()}
	}
	c := &Cluster{t: t}
	name := fmt.Sprintf("natstest-%d", time.Now().UnixNano())
	for i := range n {
		s := &Server{t: t, dir: t.TempDir(), name: fmt.Sprintf("n%d", i), cluster: name,
			clusterPort: reserved[i].Addr().(*net.TCPAddr).Port,
			routes:      append(append([]*url.URL(nil), routes[:i]...), routes[i+1:]...)}
		reserved[i].Close() // hand the port over to the server
		if err := s.start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
		c.servers = append(c.servers, s)
	}
	if err := c.WaitReady(clusterReady); err != nil {
		t.Fatal(err)
	}
	return c
}

// WaitReady waits up to timeout until every running server is current
// with a JetStream meta leader and the cluster places a stream replicated
// on every running server: after StartCluster, or after a member was
// resumed. The meta group alone is not enough: the leader places a
// stream only on peers it has had statistics from, and until it has them
// a create fails with "no suitable peers for placement, peer offline"
// (seen once in 25 fresh clusters), so WaitReady creates such a stream,
// retrying, and deletes it.
func (c *Cluster) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	running := 0
	for {
		leader, current := false, 0
		running = 0
		for _, s := range c.servers {
			s.mu.Lock()
			if srv := s.srv; srv != nil {
				running++
				leader = leader || srv.JetStreamIsLeader()
				if srv.JetStreamIsCurrent() {
					current++
				}
			}
			s.mu.Unlock()
		}
		if leader && current == running {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("natstest: cluster of %d servers (%d running): no JetStream meta leader that all follow after %v (leader %v, %d current)",
				len(c.servers), running, timeout, leader, current)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return c.probePlacement(deadline, running)
}

// probePlacement creates and deletes a memory stream of replicas
// replicas, retrying its creation until deadline.
func (c *Cluster) probePlacement(deadline time.Time, replicas int) error {
	nc, err := nats.Connect(c.URL(), ConnectOptions()...)
	if err != nil {
		return fmt.Errorf("natstest: connect to the cluster: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("natstest: cluster: %w", err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	const probe = "natstest-placement"
	for {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: probe, Subjects: []string{probe}, Storage: jetstream.MemoryStorage, Replicas: replicas})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("natstest: cluster of %d servers does not place a stream of %d replicas: %w", len(c.servers), replicas, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := js.DeleteStream(ctx, probe); err != nil {
		return fmt.Errorf("natstest: cluster: delete stream %q: %w", probe, err)
	}
	return nil
}

// Name is a cluster member's server name (n0, n1, ...), as stream infos
// name their leader and replicas; "" for a server alone.
func (s *Server) Name() string { return s.name }

// Servers are the cluster's members, the seed first.
func (c *Cluster) Servers() []*Server { return c.servers }

// URL lists every member's client URL, comma-separated: a client given it
// connects to any member and fails over to the others.
func (c *Cluster) URL() string {
	urls := make([]string, len(c.servers))
	for i, s := range c.servers {
		urls[i] = s.URL()
	}
	return strings.Join(urls, ",")
}

// Connect opens a connection to the cluster (URL) with ConnectOptions and
// opts, closed when the test ends. It fails the test on an error.
func (c *Cluster) Connect(opts ...nats.Option) *nats.Conn {
	c.t.Helper()
	nc, err := nats.Connect(c.URL(), append(ConnectOptions(), opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(nc.Close)
	return nc
}
