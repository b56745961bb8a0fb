package watermark_test

import (
	"context"
	"fmt"
	"time"

	"github.com/runnel-dev/runnel/watermark"
)

// Two replicas of vertex "map" write to the buffer of vertex "sink"; the
// sink's reader fetches the watermark of what it reads.
func Example() {
	ctx := context.Background()
	store := watermark.NewMemStore()
	at := func(sec int64) time.Time { return time.Unix(sec, 0).UTC() }

	var pubs []*watermark.Publisher
	for _, name := range []string{"map-0", "map-1"} {
		p, err := watermark.NewPublisher(store, watermark.PublisherConfig{
			Processor: name,
			Edges:     []watermark.PublisherEdge{{Bucket: "map-sink", Partitions: 1}},
		})
		if err != nil {
			panic(err)
		}
		if err := p.Start(ctx); err != nil {
			panic(err)
		}
		defer p.Stop(ctx)
		pubs = append(pubs, p)
	}
	// map-0 wrote offsets up to 4 with watermark 100s, map-1 up to 7 at 90s.
	_ = pubs[0].Publish("map-sink", 0, 4, at(100))
	_ = pubs[1].Publish("map-sink", 0, 7, at(90))
	// Publish never waits for the store; Flush does, so the fetcher
	// started next finds both WMBs.
	for _, p := range pubs {
		if err := p.Flush(ctx); err != nil {
			panic(err)
		}
	}

	f, err := watermark.NewFetcher(store, watermark.FetcherConfig{Edges: []string{"map-sink"}, Partitions: []int{0}})
	if err != nil {
		panic(err)
	}
	if err := f.Start(ctx); err != nil {
		panic(err)
	}
	defer f.Stop()
	fmt.Println(f.Fetch(0, 5).IsZero()) // map-1 has said nothing below 5 yet
	fmt.Println(f.Fetch(0, 8).Unix())   // min(100, 90)
	// Output:
	// true
	// 90
}

func ExampleSource() {
	s, err := watermark.NewSource(watermark.SourceConfig{Partitions: 1, MaxDelay: 2 * time.Second})
	if err != nil {
		panic(err)
	}
	batchMin := time.Unix(100, 0)
	wm := s.Observe(0, batchMin)
	fmt.Println(wm.Unix(), watermark.IsLate(time.Unix(97, 0), wm), watermark.IsLate(time.Unix(99, 0), wm))
	// Output: 98 true false
}

// The writer asks the IdleManager about each partition it did not write to;
// an idle partition gets one control message, then idle WMBs at its offset.
func ExampleIdleManager() {
	now := time.Unix(0, 0)
	clock := func() time.Time { return now }
	m, err := watermark.NewIdleManager(1, time.Second, clock)
	if err != nil {
		panic(err)
	}
	now = now.Add(time.Second)
	step, _ := m.Next(0)
	fmt.Println(step.Action)
	_ = m.ControlWritten(0, 41) // the control message landed at offset 41
	step, _ = m.Next(0)
	fmt.Println(step.Action, step.Offset)
	// Output:
	// write-control
	// publish-idle 41
}
