package jskv_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/watermark"
	"github.com/runnel-dev/runnel/watermark/jskv"
)

var pubBase = time.Unix(1_700_000_000, 0).UTC()

// newPublisher starts a publisher p-0 of two partitions into bucket b of s.
func newPublisher(t *testing.T, s *jskv.Store) *watermark.Publisher {
	t.Helper()
	p, err := watermark.NewPublisher(s, watermark.PublisherConfig{
		Processor: "p-0", Edges: []watermark.PublisherEdge{{Bucket: "b", Partitions: 2}},
		HeartbeatInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return p
}

// storedEventually waits until the WMB of partition in bucket b is want:
// WMBs only move forward, so reaching it is exact.
func storedEventually(t *testing.T, s *jskv.Store, partition string, want watermark.WMB) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var got watermark.WMB
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		v, err := s.Get(ctx, "b", "wmb.p-0."+partition)
		cancel()
		if err == nil {
			if err := got.UnmarshalBinary(v); err != nil {
				t.Fatal(err)
			}
			if got == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("partition %s: stored %v (%v), want %v", partition, got, err, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPublishWhileServerDown: with the server stopped, a thousand Publish
// calls and a PublishEnd all return (the data path never waits for NATS);
// when the server is back, the store gets the latest WMB of each partition,
// the final one included, without anything published again.
func TestPublishWhileServerDown(t *testing.T) {
	srv := startServer(t)
	_, js := srv.connect(reconnectForever...)
	s := newStore(t, js)
	p := newPublisher(t, s)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Stop(ctx); err != nil {
			t.Error(err)
		}
	}()
	if err := p.Publish("b", 0, 1, pubBase); err != nil {
		t.Fatal(err)
	}
	storedEventually(t, s, "0", watermark.WMB{Offset: 1, Watermark: pubBase})

	srv.stop()
	for i := int64(2); i <= 1001; i++ {
		if err := p.Publish("b", 0, i, pubBase.Add(time.Duration(i)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.PublishEnd("b", 1, 7); err != nil {
		t.Fatal(err)
	}
	if srv.Running() {
		t.Fatal("the server is running: the publishes did not happen while it was down")
	}
	last := watermark.WMB{Offset: 1001, Watermark: pubBase.Add(1001 * time.Millisecond)}
	if got, _ := p.Latest("b", 0); got != last {
		t.Fatalf("Latest = %v, want %v", got, last)
	}

	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	storedEventually(t, s, "0", last)
	storedEventually(t, s, "1", watermark.WMB{Offset: 7, Watermark: watermark.Max, Idle: true, Partition: 1})
}

// TestStopWaitsForFinalWMB: a final WMB published while the server is down
// is put by Stop once the server is back, Stop waiting for it within its
// context; a Stop whose context ends first returns that error.
func TestStopWaitsForFinalWMB(t *testing.T) {
	srv := startServer(t)
	_, js := srv.connect(reconnectForever...)
	s := newStore(t, js)

	short := newPublisher(t, s)
	srv.stop()
	if err := short.PublishEnd("b", 0, 3); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	err := short.Stop(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop with the server down = %v, want context.DeadlineExceeded", err)
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}

	p := newPublisher(t, s)
	srv.stop()
	if err := p.PublishEnd("b", 1, 9); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		stopped <- p.Stop(ctx)
	}()
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Stop after the server came back: %v", err)
	}
	// Stop returned nil: the final WMB is in the store, not merely queued.
	v, err := s.Get(t.Context(), "b", "wmb.p-0.1")
	var w watermark.WMB
	if err != nil || w.UnmarshalBinary(v) != nil || w != (watermark.WMB{Offset: 9, Watermark: watermark.Max, Idle: true, Partition: 1}) {
		t.Fatalf("after Stop: %v (%v), want the final WMB of partition 1", w, err)
	}
}
