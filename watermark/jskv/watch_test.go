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

// TestWatchResumesAfterServerRestarts: the server stops and starts again
// on the same store directory, twice; the watch reopens its watcher from
// the revision after the last change it delivered and carries on with the
// changes made since, another connection's among them (made while the
// watch's connection may not have reconnected yet), each exactly once and
// in order: a change delivered twice or missed would show up in the exact
// sequence. The bucket keeps 10 values per key: with the default 1, a
// change made before the watch reopens is replaced by the next change of
// its key, which the watch then sees alone (the Store contract allows it).
// The values written before the restarts are still there.
func TestWatchResumesAfterServerRestarts(t *testing.T) {
	srv, s, w := watchedStore(t, reconnectForever, jskv.WithHistory(10))
	_, js := srv.connect(reconnectForever...)
	other := newStore(t, js)
	putEventually(t, s, "b", "k2", "2")
	w.Expect("put k2=2")

	srv.restart()
	putEventually(t, other, "b", "k3", "3")
	putEventually(t, other, "b", "k", "4")
	putEventually(t, s, "b", "k", "5")
	w.Expect("put k3=3", "put k=4", "put k=5")

	srv.restart()
	putEventually(t, other, "b", "k", "6")
	if err := other.Delete(t.Context(), "b", "k3"); err != nil {
		t.Fatal(err)
	}
	putEventually(t, s, "b", "last", "7")
	w.Expect("put k=6", "delete k3=", "put last=7")
	v, err := s.Get(t.Context(), "b", "k2")
	if err != nil || string(v) != "2" {
		t.Fatalf("Get after restart = %q, %v; want 2", v, err)
	}
}

// TestWatchWaitsWhileServerDown: a watch started while the server is down
// neither fails nor ends; it opens once the server is back and delivers
// what is there.
func TestWatchWaitsWhileServerDown(t *testing.T) {
	srv := startServer(t)
	_, js := srv.connect(reconnectForever...)
	s := newStore(t, js)
	putEventually(t, s, "b", "k", "1")
	srv.stop()
	w := storetest.StartWatch(t, s, "b")
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	w.Expect("put k=1", "synced =")
	putEventually(t, s, "b", "k", "2")
	w.Expect("put k=2")
}

// TestWatchResumesWhenConsumerDeleted: the watch's consumer is deleted on
// the server; the watch goes on (the client recreates the consumer from
// the next revision once its heartbeats stop) with the changes made since.
func TestWatchResumesWhenConsumerDeleted(t *testing.T) {
	t.Parallel() // waits for two missed 5s heartbeats
	srv, s, w := watchedStore(t, reconnectForever)
	_, js := srv.connect()
	stream, err := js.Stream(t.Context(), "KV_b")
	if err != nil {
		t.Fatal(err)
	}
	names := stream.ConsumerNames(t.Context())
	n := 0
	for name := range names.Name() {
		if err := stream.DeleteConsumer(t.Context(), name); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if names.Err() != nil || n != 1 {
		t.Fatalf("deleted %d consumers (%v), want the watch's one", n, names.Err())
	}
	putEventually(t, s, "b", "k", "2")
	putEventually(t, s, "b", "j", "3")
	w.Expect("put k=2", "put j=3")
}

// TestWatchFailsWhenMemoryBucketLost: a restart loses a memory bucket; the
// watch cannot go on from where it was and fails, naming the bucket,
// instead of waiting forever.
func TestWatchFailsWhenMemoryBucketLost(t *testing.T) {
	srv, _, w := watchedStore(t, reconnectForever, jskv.WithStorage(jetstream.MemoryStorage))
	srv.restart()
	err := w.ExpectFailure()
	var we *jskv.WatchError
	if want := `jskv: watch failed: bucket "b": jskv: bucket deleted: stream KV_b not found`; !errors.As(err, &we) || we.Bucket != "b" ||
		!errors.Is(err, jskv.ErrBucketDeleted) || !errors.Is(err, jskv.ErrWatchFailed) || err.Error() != want {
		t.Fatalf("watch failed with %v; want %s", err, want)
	}
}

// TestWatchFailsWhenBucketDeleted: the bucket is deleted under a watch,
// and at once created again by a Put, as a publisher's next heartbeat
// does: the watch fails, naming the bucket, rather than following the new
// bucket from the old one's revision (it would skip the new bucket's first
// changes).
func TestWatchFailsWhenBucketDeleted(t *testing.T) {
	for _, again := range []bool{false, true} {
		t.Run(map[bool]string{false: "deleted", true: "created-again"}[again], func(t *testing.T) {
			srv, s, w := watchedStore(t, reconnectForever)
			_, js := srv.connect()
			if err := js.DeleteKeyValue(t.Context(), "b"); err != nil {
				t.Fatal(err)
			}
			if again {
				putEventually(t, s, "b", "k", "2")
			}
			err := w.ExpectFailure()
			var we *jskv.WatchError
			if !errors.As(err, &we) || we.Bucket != "b" || !errors.Is(err, jskv.ErrBucketDeleted) {
				t.Fatalf("watch failed with %v; want a *jskv.WatchError for bucket b matching ErrBucketDeleted", err)
			}
		})
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
	if want := `jskv: watch failed: bucket "b": nats: connection closed`; err.Error() != want || !errors.Is(err, nats.ErrConnectionClosed) {
		t.Fatalf("watch failed with %v; want %s", err, want)
	}
}
