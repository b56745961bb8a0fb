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

// waitTimeout bounds every wait, so a hang fails the test. The ordered
// consumer notices a restarted server after two missed 5s heartbeats at
// worst, so resuming may take over 10s.
const waitTimeout = 60 * time.Second

type result struct {
	u   watermark.Update
	err error
}

// watch ranges over a watch of bucket on a goroutine and sends what it
// yields to the returned channel, closed when the watch ends. The test ends
// the watch when it ends, and waits for it.
func watch(t *testing.T, s watermark.Store, bucket string) <-chan result {
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan result, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		for u, err := range s.Watch(ctx, bucket) {
			out <- result{u, err}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return out
}

// expect receives updates rendered as want, in order.
func expect(t *testing.T, updates <-chan result, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case r, ok := <-updates:
			if !ok || r.err != nil {
				t.Fatalf("watch ended (%v) before %q", r.err, w)
			}
			if got := storetest.Render([]watermark.Update{r.u})[0]; got != w {
				t.Fatalf("watch yielded %q, want %q", got, w)
			}
		case <-time.After(waitTimeout):
			t.Fatalf("no %q within %v", w, waitTimeout)
		}
	}
}

// expectFailure receives one error and then the end of the watch.
func expectFailure(t *testing.T, updates <-chan result) error {
	t.Helper()
	var err error
	for {
		select {
		case r, ok := <-updates:
			if !ok {
				if err == nil {
					t.Fatal("watch ended without an error")
				}
				return err
			}
			if err != nil {
				t.Fatalf("watch yielded %v after its error %v", r, err)
			}
			if r.err == nil {
				t.Fatalf("watch yielded %q, want an error", storetest.Render([]watermark.Update{r.u}))
			}
			err = r.err
		case <-time.After(waitTimeout):
			t.Fatalf("watch did not fail within %v", waitTimeout)
		}
	}
}

// putEventually retries a Put until the server is back and accepts it.
func putEventually(t *testing.T, s watermark.Store, bucket, key, value string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := s.Put(ctx, bucket, key, []byte(value))
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Put(%q, %q) after restart: %v", bucket, key, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWatchResumesAfterServerRestart: the server stops and starts again on
// the same store directory; the client reconnects and the watch carries on
// with the next change, having lost and repeated nothing. The values
// written before the restart are still there.
func TestWatchResumesAfterServerRestart(t *testing.T) {
	t.Parallel() // waits for missed heartbeats, as the memory bucket test does
	srv := startServer(t)
	_, js := srv.connect(nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	s, err := jskv.New(js)
	if err != nil {
		t.Fatal(err)
	}
	putEventually(t, s, "b", "k1", "1")
	updates := watch(t, s, "b")
	expect(t, updates, "put k1=1", "synced =")
	putEventually(t, s, "b", "k2", "2")
	expect(t, updates, "put k2=2")

	srv.restart()
	putEventually(t, s, "b", "k3", "3")
	putEventually(t, s, "b", "k1", "4")
	expect(t, updates, "put k3=3", "put k1=4")
	select {
	case r := <-updates:
		t.Fatalf("watch yielded %v after the last change", r)
	default:
	}
	v, err := s.Get(t.Context(), "b", "k2")
	if err != nil || string(v) != "2" {
		t.Fatalf("Get after restart = %q, %v; want 2", v, err)
	}
}

// TestWatchFailsWhenMemoryBucketLost: a restart loses a memory bucket; the
// watch cannot recreate its consumer and fails instead of waiting forever.
func TestWatchFailsWhenMemoryBucketLost(t *testing.T) {
	t.Parallel() // waits for missed heartbeats, as the restart test does
	srv := startServer(t)
	asyncErrs := make(chan error, 100)
	_, js := srv.connect(nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case asyncErrs <- err:
			default:
			}
		}))
	s, err := jskv.New(js, jskv.WithStorage(jetstream.MemoryStorage))
	if err != nil {
		t.Fatal(err)
	}
	putEventually(t, s, "b", "k", "1")
	updates := watch(t, s, "b")
	expect(t, updates, "put k=1", "synced =")
	srv.restart()
	err = expectFailure(t, updates)
	if want := `jskv: watch failed: bucket "b": the ordered consumer could not be recreated (connection CONNECTED; the connection's async error handler has the cause)`; !errors.Is(err, jskv.ErrWatchFailed) || err.Error() != want {
		t.Fatalf("watch failed with %v; want %s", err, want)
	}
	// The cause went to the connection's handler, as the error says.
	for {
		select {
		case err := <-asyncErrs:
			if errors.Is(err, nats.ErrStreamNotFound) {
				return
			}
		default:
			t.Fatal("no stream-not-found error reached the connection's error handler")
		}
	}
}

// TestWatchFailsWhenConnectionDrops: the server goes away and the
// connection, allowed no reconnect, closes; the watch yields an error and
// ends.
func TestWatchFailsWhenConnectionDrops(t *testing.T) {
	srv := startServer(t)
	_, js := srv.connect(nats.NoReconnect())
	s, err := jskv.New(js)
	if err != nil {
		t.Fatal(err)
	}
	putEventually(t, s, "b", "k", "1")
	updates := watch(t, s, "b")
	expect(t, updates, "put k=1", "synced =")
	srv.stop()
	err = expectFailure(t, updates)
	if !errors.Is(err, jskv.ErrWatchFailed) || !errors.Is(err, nats.ErrConnectionClosed) {
		t.Fatalf("watch failed with %v; want ErrWatchFailed wrapping nats.ErrConnectionClosed", err)
	}
}

// TestWatchFailsWhenConnectionClosed: the application closes the
// connection under a watch; the watch yields an error and ends.
func TestWatchFailsWhenConnectionClosed(t *testing.T) {
	nc, js := startServer(t).connect()
	s, err := jskv.New(js)
	if err != nil {
		t.Fatal(err)
	}
	updates := watch(t, s, "b")
	expect(t, updates, "synced =")
	nc.Close()
	err = expectFailure(t, updates)
	if want := `jskv: watch failed: bucket "b": nats: connection closed`; err.Error() != want {
		t.Fatalf("watch failed with %v; want %s", err, want)
	}
}
