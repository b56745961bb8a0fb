package watermark

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/tracker"
)

type pubFixture struct {
	t     *testing.T
	ctx   context.Context
	clock *fakeClock
	store *MemStore
	p     *Publisher
}

func newPubFixture(t *testing.T, cfg PublisherConfig) *pubFixture {
	t.Helper()
	fx := &pubFixture{t: t, ctx: context.Background(), clock: newFakeClock(), store: NewMemStore()}
	if cfg.Processor == "" {
		cfg.Processor = "map-0"
	}
	if cfg.Edges == nil {
		cfg.Edges = []PublisherEdge{{Bucket: "map-sink", Partitions: 2}}
	}
	cfg.Clock = fx.clock.Now
	p, err := NewPublisher(fx.store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fx.p = p
	return fx
}

// stored returns the WMB in the store for partition of the default edge,
// after a round of the publisher's goroutine (run here, the fixture does
// not Start it): what Publish made due is in the store, what the throttle
// keeps is not.
func (fx *pubFixture) stored(partition int) (WMB, bool) {
	fx.t.Helper()
	if err := fx.p.drain(fx.ctx, false, true); err != nil {
		fx.t.Fatal(err)
	}
	b, err := fx.store.Get(fx.ctx, "map-sink", wmbKey("map-0", partition))
	if errors.Is(err, ErrNotFound) {
		return WMB{}, false
	}
	if err != nil {
		fx.t.Fatal(err)
	}
	var w WMB
	if err := w.UnmarshalBinary(b); err != nil {
		fx.t.Fatal(err)
	}
	return w, true
}

func (fx *pubFixture) wantStored(partition int, want WMB) {
	fx.t.Helper()
	got, ok := fx.stored(partition)
	if !ok || got != want {
		fx.t.Fatalf("stored WMB of partition %d = %v (present %v), want %v", partition, got, ok, want)
	}
}

func TestPublishNeverBackwards(t *testing.T) {
	fx := newPubFixture(t, PublisherConfig{})
	must(t, fx.p.Publish("map-sink", 1, 10, ms(200)))
	fx.wantStored(1, WMB{Offset: 10, Watermark: ms(200), Partition: 1})
	must(t, fx.p.Publish("map-sink", 1, 11, ms(100))) // backwards: nothing new
	fx.wantStored(1, WMB{Offset: 10, Watermark: ms(200), Partition: 1})
	must(t, fx.p.Publish("map-sink", 1, 12, ms(300)))
	fx.wantStored(1, WMB{Offset: 12, Watermark: ms(300), Partition: 1})
	must(t, fx.p.Publish("map-sink", 1, 11, ms(400))) // a late worker's lower offset
	fx.wantStored(1, WMB{Offset: 12, Watermark: ms(400), Partition: 1})
	if _, ok := fx.stored(0); ok {
		t.Fatal("partition 0 has a WMB but was never written")
	}
}

// A write at a higher offset whose watermark is unchanged puts nothing,
// but its offset is kept: a worker that wrote below it and publishes a
// higher watermark afterwards publishes at that offset. Otherwise the
// higher watermark would land below messages written at the lower one.
func TestPublishKeepsTheOffsetOfAnUnchangedWatermark(t *testing.T) {
	fx := newPubFixture(t, PublisherConfig{})
	must(t, fx.p.Publish("map-sink", 1, 10, ms(200)))
	fx.wantStored(1, WMB{Offset: 10, Watermark: ms(200), Partition: 1})
	must(t, fx.p.Publish("map-sink", 1, 30, ms(200))) // written up to 30 at an unchanged watermark
	fx.wantStored(1, WMB{Offset: 10, Watermark: ms(200), Partition: 1})
	must(t, fx.p.Publish("map-sink", 1, 20, ms(300))) // a worker that wrote up to 20, done later
	fx.wantStored(1, WMB{Offset: 30, Watermark: ms(300), Partition: 1})
}

func TestPublishThrottle(t *testing.T) {
	fx := newPubFixture(t, PublisherConfig{Throttle: 100 * time.Millisecond})
	must(t, fx.p.Publish("map-sink", 0, 1, ms(100)))
	fx.wantStored(0, WMB{Offset: 1, Watermark: ms(100)})
	fx.clock.Advance(10 * time.Millisecond)
	must(t, fx.p.Publish("map-sink", 0, 2, ms(200)))
	must(t, fx.p.Publish("map-sink", 0, 3, ms(300)))
	fx.wantStored(0, WMB{Offset: 1, Watermark: ms(100)}) // held back
	if w, _ := fx.p.Latest("map-sink", 0); w != (WMB{Offset: 3, Watermark: ms(300)}) {
		t.Fatalf("Latest = %v", w)
	}
	must(t, fx.p.Flush(fx.ctx))
	fx.wantStored(0, WMB{Offset: 3, Watermark: ms(300)})
	// The flush restarted the interval; after it, a publish goes through.
	fx.clock.Advance(100 * time.Millisecond)
	must(t, fx.p.Publish("map-sink", 0, 4, ms(400)))
	fx.wantStored(0, WMB{Offset: 4, Watermark: ms(400)})
}

func TestPublishIdleAndResume(t *testing.T) {
	fx := newPubFixture(t, PublisherConfig{Throttle: time.Minute})
	must(t, fx.p.Publish("map-sink", 0, 5, ms(100)))
	must(t, fx.p.PublishIdle("map-sink", 0, 6, ms(150))) // not throttled
	fx.wantStored(0, WMB{Offset: 6, Watermark: ms(150), Idle: true})
	must(t, fx.p.PublishIdle("map-sink", 0, 6, ms(250)))
	fx.wantStored(0, WMB{Offset: 6, Watermark: ms(250), Idle: true})
	must(t, fx.p.PublishIdle("map-sink", 0, 6, ms(200))) // backwards: nothing
	fx.wantStored(0, WMB{Offset: 6, Watermark: ms(250), Idle: true})
	// Data again, even at the same watermark and inside the throttle
	// interval: the partition is active at once.
	must(t, fx.p.Publish("map-sink", 0, 7, ms(250)))
	fx.wantStored(0, WMB{Offset: 7, Watermark: ms(250)})
}

// TestIdleNeverPassesInFlight is Numaflow issue 3399: the vertex watermark
// has moved on (500) while a message read earlier (watermark 100) is still
// being processed and will be written to the idle partition later. The idle
// WMB must not tell downstream that time 500 is done.
func TestIdleNeverPassesInFlight(t *testing.T) {
	tr := tracker.New[int](1)
	fx := newPubFixture(t, PublisherConfig{InFlight: tr.LowestWatermark})
	must(t, tr.Insert(0, 41, ms(100), 0))
	must(t, fx.p.PublishIdle("map-sink", 1, 9, ms(500)))
	fx.wantStored(1, WMB{Offset: 9, Watermark: ms(100), Idle: true, Partition: 1})
	// The message is acked: the idle watermark may now advance.
	tr.Delete(0, 41)
	must(t, fx.p.PublishIdle("map-sink", 1, 9, ms(500)))
	fx.wantStored(1, WMB{Offset: 9, Watermark: ms(500), Idle: true, Partition: 1})
}

func TestPublisherStartStop(t *testing.T) {
	fx := newPubFixture(t, PublisherConfig{
		Edges:     []PublisherEdge{{Bucket: "a", Partitions: 1}, {Bucket: "b", Partitions: 1}},
		Throttle:  time.Hour,
		Processor: "map-0",
	})
	must(t, fx.p.Start(fx.ctx))
	for _, bucket := range []string{"a", "b"} {
		v, err := fx.store.Get(fx.ctx, bucket, "hb.map-0")
		if err != nil {
			t.Fatalf("heartbeat in %s: %v", bucket, err)
		}
		if at, err := decodeHeartbeat(v); err != nil || !at.Equal(fx.clock.Now().Truncate(time.Millisecond)) {
			t.Fatalf("heartbeat in %s = %v, %v", bucket, at, err)
		}
	}
	must(t, fx.p.Publish("a", 0, 1, ms(10)))
	fx.clock.Advance(time.Millisecond)
	must(t, fx.p.Publish("a", 0, 2, ms(20))) // pending under the throttle
	if err := fx.p.Start(fx.ctx); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start = %v, want ErrStarted", err)
	}
	must(t, fx.p.Stop(fx.ctx))
	// Stop flushed the pending WMB and removed the heartbeats.
	b, _ := fx.store.Get(fx.ctx, "a", wmbKey("map-0", 0))
	var w WMB
	if err := w.UnmarshalBinary(b); err != nil || w != (WMB{Offset: 2, Watermark: ms(20)}) {
		t.Fatalf("after Stop the store has %v (%v)", w, err)
	}
	for _, bucket := range []string{"a", "b"} {
		if _, err := fx.store.Get(fx.ctx, bucket, "hb.map-0"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("heartbeat in %s after Stop: %v", bucket, err)
		}
	}
	must(t, fx.p.Stop(fx.ctx)) // idempotent
	if err := fx.p.Start(fx.ctx); !errors.Is(err, ErrStarted) {
		t.Fatalf("Start after Stop = %v, want ErrStarted", err)
	}
}

func TestPublishErrors(t *testing.T) {
	fx := newPubFixture(t, PublisherConfig{})
	cases := []struct {
		name string
		err  error
		want error
		text string
	}{
		{"unknown edge", fx.p.Publish("nope", 0, 1, ms(1)), ErrUnknownEdge,
			`watermark: unknown edge: publisher "map-0" has no edge "nope"`},
		{"partition", fx.p.Publish("map-sink", 2, 1, ms(1)), ErrPartition,
			`watermark: partition out of range: edge "map-sink" partition 2, want 0..1`},
		{"offset", fx.p.Publish("map-sink", 0, -1, ms(1)), ErrRange,
			`watermark: value out of range: edge "map-sink" partition 0: offset -1 is negative`},
		{"time", fx.p.PublishIdle("map-sink", 0, 1, time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)), ErrRange, ""},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.want) || (c.text != "" && c.err.Error() != c.text) {
			t.Errorf("%s: err = %v, want %v %q", c.name, c.err, c.want, c.text)
		}
	}
	cfgs := map[string]PublisherConfig{
		"no processor":   {Edges: []PublisherEdge{{Bucket: "e", Partitions: 1}}},
		"bad processor":  {Processor: "a.b", Edges: []PublisherEdge{{Bucket: "e", Partitions: 1}}},
		"no edges":       {Processor: "p"},
		"bad bucket":     {Processor: "p", Edges: []PublisherEdge{{Bucket: "e e", Partitions: 1}}},
		"twice":          {Processor: "p", Edges: []PublisherEdge{{Bucket: "e", Partitions: 1}, {Bucket: "e", Partitions: 1}}},
		"no partitions":  {Processor: "p", Edges: []PublisherEdge{{Bucket: "e"}}},
		"neg throttle":   {Processor: "p", Edges: []PublisherEdge{{Bucket: "e", Partitions: 1}}, Throttle: -1},
		"neg heartbeats": {Processor: "p", Edges: []PublisherEdge{{Bucket: "e", Partitions: 1}}, HeartbeatInterval: -1},
	}
	for name, c := range cfgs {
		if _, err := NewPublisher(NewMemStore(), c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig", name, err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestPublishConcurrentNeverBackwards: workers publish one partition at
// once with watermarks in any order; what reaches the store, as seen by a
// watcher, never goes backwards in watermark or offset, and the store ends
// at the highest.
func TestPublishConcurrentNeverBackwards(t *testing.T) {
	fx := newPubFixture(t, PublisherConfig{})
	ctx, cancel := context.WithCancel(fx.ctx)
	seen := make(chan []WMB)
	ready := make(chan struct{})
	go func() {
		var got []WMB
		for u, err := range fx.store.Watch(ctx, "map-sink") {
			if err != nil {
				t.Error(err)
				break
			}
			if u.Op == OpSynced {
				close(ready)
				continue
			}
			var w WMB
			if err := w.UnmarshalBinary(u.Value); err != nil {
				t.Error(err)
				break
			}
			got = append(got, w)
			if w.Offset == 2000 { // the final value: everything before it was seen
				break
			}
		}
		seen <- got
	}()
	<-ready
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				n := int64(i*4 + g)
				if err := fx.p.Publish("map-sink", 0, n, ms(n)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	must(t, fx.p.Publish("map-sink", 0, 2000, ms(2000))) // a final, known value
	fx.wantStored(0, WMB{Offset: 2000, Watermark: ms(2000)})
	got := <-seen
	cancel()
	if len(got) == 0 || got[len(got)-1] != (WMB{Offset: 2000, Watermark: ms(2000)}) {
		t.Fatalf("watcher saw %d WMBs without the final one last", len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i].Watermark.Before(got[i-1].Watermark) || got[i].Offset < got[i-1].Offset {
			t.Fatalf("store went backwards: %v then %v", got[i-1], got[i])
		}
	}
}
