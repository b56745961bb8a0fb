package watermark

import (
	"context"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/tracker"
)

// TestIdleFlow runs the writer side (IdleManager + Publisher with a
// tracker) against the reader side (a started Fetcher) through a MemStore:
// partition 1 stops receiving data, gets a control message and idle WMBs, and
// the downstream vertex watermark advances past it, but never beyond the
// message still in flight upstream.
func TestIdleFlow(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	store := NewMemStore()
	tr := tracker.New[struct{}](1)
	pub, err := NewPublisher(store, PublisherConfig{
		Processor: "map-0", Edges: []PublisherEdge{{Bucket: "map-sink", Partitions: 2}},
		HeartbeatInterval: time.Hour, InFlight: tr.LowestWatermark, Clock: clock.Now,
	})
	must(t, err)
	must(t, pub.Start(ctx))
	defer pub.Stop(ctx)
	idle, err := NewIdleManager(2, time.Second, clock.Now)
	must(t, err)
	f, err := NewFetcher(store, FetcherConfig{Edges: []string{"map-sink"}, Partitions: []int{0, 1}, Clock: clock.Now})
	must(t, err)
	must(t, f.Start(ctx))
	defer f.Stop()

	// Both partitions get data with watermark 100.
	for p := range 2 {
		must(t, pub.Publish("map-sink", p, 0, ms(100)))
		must(t, idle.Wrote(p))
	}
	waitFor(t, f, func() bool { f.Fetch(0, 1); return f.FetchIdle(1, 1).Equal(ms(100)) })

	// Partition 0 keeps getting data; partition 1 goes quiet. A message with
	// watermark 300 is in flight upstream.
	must(t, tr.Insert(0, 7, ms(300), struct{}{}))
	clock.Advance(time.Second)
	must(t, pub.Publish("map-sink", 0, 5, ms(900)))
	must(t, idle.Wrote(0))
	step, err := idle.Next(1)
	must(t, err)
	if step.Action != IdleWriteControl {
		t.Fatalf("Next(1) = %+v, want write-control", step)
	}
	must(t, idle.ControlWritten(1, 1)) // the control message is at offset 1
	step, err = idle.Next(1)
	must(t, err)
	if step != (IdleStep{Action: IdlePublish, Offset: 1}) {
		t.Fatalf("Next(1) = %+v, want publish-idle at 1", step)
	}
	// The vertex watermark upstream is 900, but 300 is still in flight.
	must(t, pub.PublishIdle("map-sink", 1, step.Offset, ms(900)))
	// Downstream read partition 0 up to 6, and the control message of
	// partition 1; its empty reads then see the idle WMB.
	if w, _ := pub.Latest("map-sink", 1); w != (WMB{Offset: 1, Watermark: ms(300), Idle: true, Partition: 1}) {
		t.Fatalf("idle WMB = %v, want it capped at the in-flight watermark 300", w)
	}
	waitFor(t, f, func() bool { f.Fetch(0, 6); return f.FetchIdle(1, 2).Equal(ms(300)) })

	// Once the message is acked the idle watermark catches up.
	tr.Delete(0, 7)
	must(t, pub.PublishIdle("map-sink", 1, step.Offset, ms(900)))
	waitFor(t, f, func() bool { return f.FetchIdle(1, 2).Equal(ms(900)) })

	// Data on partition 1 again: normal WMBs resume.
	must(t, pub.Publish("map-sink", 1, 2, ms(950)))
	must(t, idle.Wrote(1))
	if s, _ := idle.Next(1); s.Action != IdleNothing {
		t.Fatalf("Next(1) after data = %+v", s)
	}
	if w, _ := pub.Latest("map-sink", 1); w != (WMB{Offset: 2, Watermark: ms(950), Partition: 1}) {
		t.Fatalf("Latest = %v", w)
	}
}
