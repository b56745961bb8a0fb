package jskv_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/watermark"
	"github.com/runnel-dev/runnel/watermark/jskv"
)

func TestErrorsWrapNATS(t *testing.T) {
	ctx := t.Context()
	nc, js := startServer(t).connect()
	s := newStore(t, js)
	if err := s.Put(ctx, "b", "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	_, err := s.Get(ctx, "b", "missing")
	if want := `jskv: bucket "b" key "missing": watermark: key not found (nats: key not found)`; !errors.Is(err, watermark.ErrNotFound) ||
		!errors.Is(err, jetstream.ErrKeyNotFound) || err == nil || err.Error() != want {
		t.Errorf("Get missing = %v; want %s", err, want)
	}
	_, err = s.Get(ctx, "nobucket", "k")
	if want := `jskv: bucket "nobucket" key "k": watermark: key not found (bucket does not exist)`; !errors.Is(err, watermark.ErrNotFound) ||
		err == nil || err.Error() != want {
		t.Errorf("Get from a missing bucket = %v; want %s", err, want)
	}
	if err := s.Put(ctx, "b", "a..b", nil); !errors.Is(err, watermark.ErrInvalidName) || !strings.HasPrefix(err.Error(), "jskv: watermark: invalid name: ") {
		t.Errorf("Put bad key = %v", err)
	}

	nc.Close()
	for _, err := range []error{
		s.Put(ctx, "b", "k", []byte("v")),
		s.Put(ctx, "new", "k", []byte("v")), // through the bucket lookup
		s.Delete(ctx, "b", "k"),
		func() error { _, err := s.Get(ctx, "b", "k"); return err }(),
	} {
		if !errors.Is(err, nats.ErrConnectionClosed) || !strings.HasPrefix(err.Error(), "jskv: ") {
			t.Errorf("after Close: %v; want a jskv error wrapping nats.ErrConnectionClosed", err)
		}
	}
}

// TestBucketDeletedBehindTheStore: a cached bucket whose stream was deleted
// is created again by the next Put.
func TestBucketDeletedBehindTheStore(t *testing.T) {
	ctx := t.Context()
	_, js := startServer(t).connect()
	s := newStore(t, js)
	if err := s.Put(ctx, "b", "k", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteKeyValue(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "b", "k", []byte("2")); err != nil {
		t.Fatalf("Put after the bucket was deleted: %v", err)
	}
	if v, err := s.Get(ctx, "b", "k"); err != nil || string(v) != "2" {
		t.Fatalf("Get = %q, %v; want 2", v, err)
	}
}

// TestConcurrentFirstUse: processes (here goroutines with stores of their
// own) that all start on a new bucket at once all succeed.
func TestConcurrentFirstUse(t *testing.T) {
	ctx := t.Context()
	srv := startServer(t)
	const n = 8
	var wg sync.WaitGroup
	stores := make([]*jskv.Store, n)
	for i := range n {
		_, js := srv.connect()
		s := newStore(t, js)
		stores[i] = s
	}
	for i, s := range stores {
		wg.Go(func() {
			if err := s.Put(ctx, "b", "k"+string(rune('a'+i)), []byte("v")); err != nil {
				t.Errorf("store %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	got := 0
	for u, err := range stores[0].Watch(ctx, "b") {
		if err != nil {
			t.Fatal(err)
		}
		if u.Op == watermark.OpSynced {
			break
		}
		got++
	}
	if got != n {
		t.Fatalf("bucket holds %d keys, want %d", got, n)
	}
}

// TestCallsWhileServerDownEndWithContext: while the connection reconnects,
// Put, Get and Delete wait no longer than their context.
func TestCallsWhileServerDownEndWithContext(t *testing.T) {
	srv := startServer(t)
	_, js := srv.connect(nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	s := newStore(t, js)
	if err := s.Put(t.Context(), "b", "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	srv.stop()
	for name, call := range map[string]func(context.Context) error{
		"Put":    func(ctx context.Context) error { return s.Put(ctx, "b", "k", []byte("w")) },
		"Get":    func(ctx context.Context) error { _, err := s.Get(ctx, "b", "k"); return err },
		"Delete": func(ctx context.Context) error { return s.Delete(ctx, "b", "k") },
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		err := call(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "jskv: ") {
			t.Errorf("%s with the server down: %v; want a jskv error wrapping context.DeadlineExceeded", name, err)
		}
	}
}
