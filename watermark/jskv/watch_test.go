package jskv_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/watermark"
	"github.com/runnel-dev/runnel/watermark/jskv"
	"github.com/runnel-dev/runnel/watermark/storetest"
)

// putEventually retries a Put until the server is back and accepts it.
func putEventually(t *testing.T, s watermark.Store, bucket, key, value string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := s.Put(ctx, bucket, key, []byte(value))
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Put(%q, %q): %v", bucket, key, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// watchedStore starts a server, a store on a connection with the given
// options, puts k=1 into bucket b and starts a watch of b that has seen it
// and OpSynced.
func watchedStore(t *testing.T, connOpts []nats.Option, opts ...jskv.Option) (*testServer, *jskv.Store, *storetest.Watch) {
	srv := startServer(t)
	_, js := srv.connect(connOpts...)
	s := newStore(t, js, opts...)
	putEventually(t, s, "b", "k", "1")
	w := storetest.StartWatch(t, s, "b")
	w.Expect("put k=1", "synced =")
	return srv, s, w
}

var reconnectForever = []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(20 * time.Millisecond)}

// TestWatchResumesAfterServerRestart: the server stops and starts again on
// the same store directory; the client reconnects and the watch carries on
// with the next change, having lost and repeated nothing. The values
// written before the restart are still there.
func TestWatchResumesAfterServerRestart(t *testing.T) {
	t.Parallel() // waits for missed heartbeats, as the memory bucket test does
	srv, s, w := watchedStore(t, reconnectForever)
	putEventually(t, s, "b", "k2", "2")
	w.Expect("put k2=2")

	srv.restart()
	putEventually(t, s, "b", "k3", "3")
	putEventually(t, s, "b", "k", "4")
	w.Expect("put k3=3", "put k=4")
	v, err := s.Get(t.Context(), "b", "k2")
	if err != nil || string(v) != "2" {
		t.Fatalf("Get after restart = %q, %v; want 2", v, err)
	}
}

// TestWatchFailsWhenMemoryBucketLost: a restart loses a memory bucket; the
// watch cannot recreate its consumer and fails instead of waiting forever.
func TestWatchFailsWhenMemoryBucketLost(t *testing.T) {
	t.Parallel() // waits for missed heartbeats, as the restart test does
	asyncErrs := make(chan error, 100)
	onError := nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case asyncErrs <- err:
		default:
		}
	})
	srv, _, w := watchedStore(t, append(reconnectForever, onError), jskv.WithStorage(jetstream.MemoryStorage))
	srv.restart()
	err := w.ExpectFailure()
	if want := `jskv: watch failed: bucket "b": the ordered consumer could not be recreated (connection CONNECTED; the connection's async error handler has the cause)`; !errors.Is(err, jskv.ErrWatchFailed) || err.Error() != want {
		t.Fatalf("watch failed with %v; want %s", err, want)
	}
	// The cause went to the connection's handler, as the error says. The
	// handler runs on the connection's own goroutine, so it may be called
	// after the watch reported its failure: wait for it.
	deadline := time.After(30 * time.Second)
	for {
		select {
		case err := <-asyncErrs:
			if errors.Is(err, nats.ErrStreamNotFound) {
				return
			}
		case <-deadline:
			t.Fatal("no stream-not-found error reached the connection's error handler in 30s")
		}
	}
}

// TestWatchFailsWhenConnectionDrops: the server goes away and the
// connection, allowed no reconnect, closes; the watch yields an error and
// ends.
func TestWatchFailsWhenConnectionDrops(t *testing.T) {
	srv, _, w := watchedStore(t, []nats.Option{nats.NoReconnect()})
	srv.stop()
	err := w.ExpectFailure()
	if !errors.Is(err, jskv.ErrWatchFailed) || !errors.Is(err, nats.ErrConnectionClosed) {
		t.Fatalf("watch failed with %v; want ErrWatchFailed wrapping nats.ErrConnectionClosed", err)
	}
}

// TestWatchFailsWhenConnectionClosed: the application closes the
// connection under a watch; the watch yields an error and ends.
func TestWatchFailsWhenConnectionClosed(t *testing.T) {
	nc, js := startServer(t).connect()
	w := storetest.StartWatch(t, newStore(t, js), "b")
	w.Expect("synced =")
	nc.Close()
	err := w.ExpectFailure()
	if want := `jskv: watch failed: bucket "b": nats: connection closed`; err.Error() != want {
		t.Fatalf("watch failed with %v; want %s", err, want)
	}
}
