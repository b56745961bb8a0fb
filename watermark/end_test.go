package watermark

import (
	"sync/atomic"
	"testing"
	"time"
)

// countingClock counts the calls of a fakeClock: a publisher reads its
// clock on every flush, so the count says how often its goroutine worked.
type countingClock struct {
	*fakeClock
	calls atomic.Int64
}

func (c *countingClock) Now() time.Time {
	c.calls.Add(1)
	return c.fakeClock.Now()
}

// TestTinyThrottleSleepsWhileNothingAdvances: Throttle(time.Nanosecond),
// the way to publish every advance, used to run a 1 ns ticker that flushed
// (and read the clock) without pause while nothing was pending, saturating a
// core. Now the goroutine does nothing while nothing advances, and a WMB
// kept by the throttle is still published by it.
func TestTinyThrottleSleepsWhileNothingAdvances(t *testing.T) {
	clock := &countingClock{fakeClock: newFakeClock()}
	store := NewMemStore()
	p, err := NewPublisher(store, PublisherConfig{
		Processor: "map-0", Edges: []PublisherEdge{{Bucket: "e", Partitions: 1}},
		Throttle: time.Nanosecond, HeartbeatInterval: time.Hour, Clock: clock.Now,
	})
	must(t, err)
	must(t, p.Start(t.Context()))
	defer func() { must(t, p.Stop(t.Context())) }()
	stored := func(want WMB) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var w WMB
			if b, err := store.Get(t.Context(), "e", wmbKey("map-0", 0)); err == nil {
				must(t, w.UnmarshalBinary(b))
				if w == want {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("WMB %v was never published (stored %v)", want, w)
			}
			time.Sleep(time.Millisecond)
		}
	}
	must(t, p.Publish("e", 0, 1, ms(100)))
	stored(WMB{Offset: 1, Watermark: ms(100)}) // the goroutine put it

	idle := func(what string) {
		t.Helper()
		before := clock.calls.Load()
		time.Sleep(50 * time.Millisecond)
		if n := clock.calls.Load() - before; n != 0 {
			t.Fatalf("%s: the publisher read its clock %d times in 50ms with nothing to publish", what, n)
		}
	}
	idle("after a publish")

	// The fake clock stands still, so this advance comes within the
	// throttle of the last put: it is kept, and the goroutine publishes it.
	must(t, p.Publish("e", 0, 2, ms(200)))
	stored(WMB{Offset: 2, Watermark: ms(200)})
	idle("after the kept WMB was published")
}

// TestPublishEnd: the final WMB of an ended partition is Max, idle, put at
// once even inside the throttle, and nothing moves it back.
func TestPublishEnd(t *testing.T) {
	fx := newPubFixture(t, PublisherConfig{Throttle: time.Minute})
	must(t, fx.p.Publish("map-sink", 1, 4, ms(100)))
	fx.wantStored(1, WMB{Offset: 4, Watermark: ms(100), Partition: 1})
	must(t, fx.p.Publish("map-sink", 1, 5, ms(200))) // kept by the throttle
	fx.wantStored(1, WMB{Offset: 4, Watermark: ms(100), Partition: 1})
	must(t, fx.p.PublishEnd("map-sink", 1, 6))
	fx.wantStored(1, WMB{Offset: 6, Watermark: Max, Idle: true, Partition: 1})
	must(t, fx.p.Publish("map-sink", 1, 7, ms(300)))
	must(t, fx.p.PublishIdle("map-sink", 1, 7, ms(300)))
	must(t, fx.p.Flush(fx.ctx))
	if w, _ := fx.stored(1); !w.Watermark.Equal(Max) {
		t.Fatalf("after the end, stored %v: the watermark moved back from Max", w)
	}
	// The encoding holds Max exactly.
	b, err := WMB{Offset: 6, Watermark: Max, Idle: true}.MarshalBinary()
	must(t, err)
	var w WMB
	must(t, w.UnmarshalBinary(b))
	if !w.Watermark.Equal(Max) {
		t.Fatalf("Max decodes as %v", w.Watermark)
	}
}

// TestSourceEnd: an ended source partition is at Max for good, so the
// source's lowest partition is one that goes on.
func TestSourceEnd(t *testing.T) {
	clock := newFakeClock()
	s, err := NewSource(SourceConfig{Partitions: 2, IdleThreshold: time.Second, StepInterval: time.Second, IncrementBy: time.Second, Clock: clock.Now})
	must(t, err)
	s.Observe(0, ms(100))
	s.Observe(1, ms(200))
	if got := s.End(0); !got.Equal(Max) {
		t.Fatalf("End(0) = %v, want Max", got)
	}
	wantWM(t, "Watermark(0)", s.Watermark(0), Max)
	wantWM(t, "Watermark(1)", s.Watermark(1), ms(200))
	wantWM(t, "Observe(0) after the end", s.Observe(0, ms(50)), Max)
	clock.Advance(time.Hour)
	if wm, ok := s.IdleAdvance(0); ok || !wm.Equal(Max) {
		t.Fatalf("IdleAdvance(0) after the end = %v, %v; want Max, false", wm, ok)
	}
	if got := s.End(2); !got.IsZero() {
		t.Fatalf("End(2) out of range = %v, want zero", got)
	}
}

// TestFetcherEndPartition: an ended partition counts as Max on every edge,
// without waiting for the final WMBs; the vertex watermark is Max once
// every partition read has ended.
func TestFetcherEndPartition(t *testing.T) {
	clock := newFakeClock()
	f := newTestFetcher(t, clock, []string{"a", "b"}, []int{0, 2})
	for e := range 2 {
		beat(f, e, "p", clock.Now())
		feed(t, f, e, "p", WMB{Offset: 1, Watermark: ms(100)})
		feed(t, f, e, "p", WMB{Offset: 1, Watermark: ms(300), Partition: 2})
	}
	wantWM(t, "Fetch(0,5)", f.Fetch(0, 5), time.Time{}) // partition 2 not fetched yet
	wantWM(t, "Fetch(2,5)", f.Fetch(2, 5), ms(100))
	wantWM(t, "EndPartition(1), not read", f.EndPartition(1), ms(100))
	wantWM(t, "EndPartition(0)", f.EndPartition(0), ms(300))
	wantWM(t, "EndPartition(2)", f.EndPartition(2), Max)
	wantWM(t, "Watermark", f.Watermark(), Max)
	wantWM(t, "Fetch after the end", f.Fetch(2, 9), Max)
}
