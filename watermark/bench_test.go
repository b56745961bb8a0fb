package watermark

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/tracker"
)

// The per-message watermark cost. Baselines in the same run:
//   - mutex: one uncontended mutex round trip, the least any shared
//     per-message hook pays;
//   - trackerPair: the tracker Insert+Delete+LowestOffset the reader already
//     pays per message (500 in flight), to size Fetch against it;
//   - storePut: encoding a WMB and putting it into the MemStore on every
//     write, what an unthrottled publisher without dedup would do.

func BenchmarkFetch(b *testing.B) {
	b.Run("mutex", func(b *testing.B) {
		var mu sync.Mutex
		n := 0
		for b.Loop() {
			mu.Lock()
			n++
			mu.Unlock()
		}
	})
	b.Run("trackerPair", func(b *testing.B) {
		tr := tracker.New[struct{}](1)
		wm := time.Now()
		for off := range int64(500) {
			_ = tr.Insert(0, off, wm, struct{}{})
		}
		next := int64(500)
		for b.Loop() {
			_ = tr.Insert(0, next, wm, struct{}{})
			tr.Delete(0, next-500)
			tr.LowestOffset(0)
			next++
		}
	})
	for _, shape := range []struct{ edges, procs, parts int }{{1, 1, 1}, {1, 2, 1}, {2, 2, 4}} {
		b.Run(fmt.Sprintf("edges=%d/procs=%d/partitions=%d", shape.edges, shape.procs, shape.parts), func(b *testing.B) {
			var edges []string
			for e := range shape.edges {
				edges = append(edges, fmt.Sprintf("e%d", e))
			}
			var parts []int
			for p := range shape.parts {
				parts = append(parts, p)
			}
			f, err := NewFetcher(NewMemStore(), FetcherConfig{Edges: edges, Partitions: parts})
			if err != nil {
				b.Fatal(err)
			}
			// Timelines of 10 WMBs, 100 offsets apart, for every processor
			// and partition; as the reader moves forward, one more WMB per
			// processor arrives every 100 offsets (outside the timing), so
			// lookups keep landing mid-timeline.
			base := time.Now()
			feedWMB := func(part int, i int64) {
				for e := range shape.edges {
					for p := range shape.procs {
						v, _ := WMB{Offset: i * 100, Watermark: base.Add(time.Duration(i) * time.Second), Partition: int32(part)}.MarshalBinary()
						f.apply(e, Update{Op: OpPut, Key: wmbKey(fmt.Sprintf("p%d", p), part), Value: v})
					}
				}
			}
			for e := range shape.edges {
				for p := range shape.procs {
					f.apply(e, Update{Op: OpPut, Key: heartbeatKey(fmt.Sprintf("p%d", p)), Value: encodeHeartbeat(base)})
				}
			}
			for part := range shape.parts {
				for i := range int64(10) {
					feedWMB(part, i)
				}
			}
			read := make([]int64, shape.parts) // each partition's reader offset, going forward
			for i := range read {
				read[i] = 500
			}
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				part := n % shape.parts
				n++
				f.Fetch(part, read[part])
				read[part]++
				if read[part]%100 == 0 {
					b.StopTimer()
					feedWMB(part, read[part]/100+5)
					b.StartTimer()
				}
			}
		})
	}
}

func BenchmarkPublish(b *testing.B) {
	ctx := context.Background()
	base := time.Now()
	b.Run("storePut", func(b *testing.B) {
		s := NewMemStore()
		buf := make([]byte, 0, wmbSize)
		off := int64(0)
		b.ReportAllocs()
		for b.Loop() {
			v, _ := WMB{Offset: off, Watermark: base.Add(time.Duration(off))}.AppendBinary(buf[:0])
			if err := s.Put(ctx, "e", "wmb.p.0", v); err != nil {
				b.Fatal(err)
			}
			off++
		}
	})
	for _, c := range []struct {
		name     string
		throttle time.Duration
		advance  bool
	}{
		{"unthrottled/advancing", 0, true},
		{"unthrottled/steady", 0, false},
		{"throttled100ms/advancing", 100 * time.Millisecond, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			p, err := NewPublisher(NewMemStore(), PublisherConfig{
				Processor: "p", Edges: []PublisherEdge{{Bucket: "e", Partitions: 1}}, Throttle: c.throttle,
			})
			if err != nil {
				b.Fatal(err)
			}
			off := int64(0)
			b.ReportAllocs()
			for b.Loop() {
				wm := base
				if c.advance {
					wm = base.Add(time.Duration(off))
				}
				if err := p.Publish("e", 0, off, wm); err != nil {
					b.Fatal(err)
				}
				off++
			}
		})
	}
}
