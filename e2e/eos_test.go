package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/watermark"
)

// storages are the buffer storages the end-of-stream tests run on: each
// gives the pipeline options that select it.
var storages = []struct {
	name    string
	options func(t *testing.T) []pipeline.Option
}{
	{"memory", func(*testing.T) []pipeline.Option { return nil }},
	{"mmap", func(t *testing.T) []pipeline.Option {
		return []pipeline.Option{pipeline.WithStorage(pipeline.MMap(t.TempDir()))}
	}},
}

// finalStore records, per edge bucket, the processor/partition keys whose
// WMB reached the final watermark (watermark.Max).
type finalStore struct {
	watermark.Store
	mu    sync.Mutex
	final map[string][]string // bucket -> "processor/partition"
}

func newFinalStore() *finalStore {
	return &finalStore{Store: watermark.NewMemStore(), final: map[string][]string{}}
}

func (s *finalStore) Put(ctx context.Context, bucket, key string, v []byte) error {
	var w watermark.WMB
	if strings.HasPrefix(key, "wmb.") && w.UnmarshalBinary(v) == nil && w.Watermark.Equal(watermark.Max) {
		proc := strings.TrimPrefix(key, "wmb.")
		proc = proc[:strings.LastIndexByte(proc, '.')]
		proc, _, _ = strings.Cut(proc, "/") // the run the pipeline names its processors with
		s.mu.Lock()
		s.final[bucket] = append(s.final[bucket], fmt.Sprintf("%s/%d", proc, w.Partition))
		s.mu.Unlock()
	}
	return s.Store.Put(ctx, bucket, key, v)
}

// finals returns the sorted final WMB keys of the edge from -> to of
// pipeline pl.
func (s *finalStore) finals(t *testing.T, pl, from, to string) []string {
	t.Helper()
	b, err := watermark.EdgeBucket(pl, from, to)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.final[b])
	slices.Sort(out)
	return out
}

// everyPartition lists "vertex-replica/partition" for each replica of a
// vertex and partition of the next one.
func everyPartition(vertexName string, replicas, partitions int) []string {
	var out []string
	for r := range replicas {
		for p := range partitions {
			out = append(out, fmt.Sprintf("%s-%d/%d", vertexName, r, p))
		}
	}
	slices.Sort(out)
	return out
}

// boundedChain builds gen (2 replicas, count n) -> double (2 replicas, 3
// partitions) -> sink (2 replicas, 2 partitions) on store.
func boundedChain(name string, n int64, store watermark.Store, opts []pipeline.Option) (*pipeline.Pipeline, *counter[int64], *vertex.GeneratorSource[int64]) {
	opts = append(slices.Clone(opts),
		pipeline.Watermarks(pipeline.WatermarkConfig{Store: store, Throttle: time.Nanosecond, IdleInterval: 5 * time.Millisecond}))
	p := pipeline.New(name, opts...)
	gen := vertex.Generator(func(i int64) int64 { return i })
	if n > 0 {
		gen.WithCount(n)
	}
	s := pipeline.Source(p, "gen", vertex.Source[int64](gen), vertex.Replicas(2), vertex.BatchSize(50))
	m := pipeline.Map(p, "double", s, func(_ context.Context, v int64) (int64, error) { return 2 * v, nil },
		vertex.Replicas(2), vertex.Partitions(3), vertex.BatchSize(32))
	sink := newCounter[int64]()
	pipeline.Sink(p, "sink", m, vertex.Sink[int64](sink), vertex.Replicas(2), vertex.Partitions(2), vertex.BatchSize(16))
	return p, sink, gen
}

// TestBoundedPipelineEndsThroughEndOfStream: a bounded source -> map ->
// sink pipeline (every vertex with 2 replicas, several partitions) ends by
// itself: nothing cancels it, and nothing but the buffers tells a vertex
// that its input ended. Every message is delivered exactly once, every
// buffer is drained, every vertex's final watermark is watermark.Max, and
// every replica published that final watermark on every partition of every
// edge it writes (the end of stream went down every edge).
func TestBoundedPipelineEndsThroughEndOfStream(t *testing.T) {
	for _, st := range storages {
		t.Run(st.name, func(t *testing.T) {
			const n = 20_000
			store := newFinalStore()
			p, sink, _ := boundedChain("eos-"+st.name, n, store, st.options(t))
			run(t, p, 60*time.Second)

			want := make(map[string]int, n)
			for i := range n {
				want[strconv.Itoa(i)] = 1
			}
			diff(t, "sink", sink.snapshot(), want)
			checkDrained(t, p)
			for _, s := range p.Stats() {
				if !s.Watermark.Equal(watermark.Max) {
					t.Errorf("vertex %s: final watermark %v, want watermark.Max", s.Name, s.Watermark)
				}
			}
			if got, want := store.finals(t, p.Name(), "gen", "double"), everyPartition("gen", 2, 3); !slices.Equal(got, want) {
				t.Errorf("final WMBs on gen -> double: %v, want %v", got, want)
			}
			if got, want := store.finals(t, p.Name(), "double", "sink"), everyPartition("double", 2, 2); !slices.Equal(got, want) {
				t.Errorf("final WMBs on double -> sink: %v, want %v", got, want)
			}
		})
	}
}

// TestCancelledPipelineDrainsWithoutFinalWatermark: an endless pipeline
// cancelled mid-run drains (the sources end their output Stopped, each
// vertex ends once its input ended and everything is acked) and delivers
// everything the source wrote exactly once, but claims no final watermark:
// a pipeline stopped to be resumed must not close windows that more data
// will reach.
func TestCancelledPipelineDrainsWithoutFinalWatermark(t *testing.T) {
	for _, st := range storages {
		t.Run(st.name, func(t *testing.T) {
			store := newFinalStore()
			p, sink, _ := boundedChain("eos-cancel-"+st.name, 0, store, st.options(t))
			stop := running(p)
			// Cancel once the sink has 5000 messages and every vertex has a
			// watermark: a fast machine delivers 5000 messages before the
			// first watermark reaches the map, and the assertion below is
			// about what a cancel does to a watermark, not whether one came.
			progressed := func() bool {
				if sink.total() < 5000 {
					return false
				}
				for _, s := range p.Stats() {
					if s.Watermark.IsZero() {
						return false
					}
				}
				return true
			}
			deadline := time.Now().Add(30 * time.Second)
			for !progressed() && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			reached := progressed()
			if err := stop(); err != nil {
				t.Fatalf("Run after cancel: %v", err)
			}
			if !reached {
				t.Fatalf("within 30s of running, the sink had %d messages and the vertices' watermarks were %v: want 5000 and a watermark at each", sink.total(), watermarks(p))
			}
			written := p.Stats()[0].Acked
			want := make(map[string]int, written)
			for i := range written {
				want[strconv.FormatInt(i, 10)] = 1
			}
			diff(t, "sink", sink.snapshot(), want)
			checkDrained(t, p)
			for _, s := range p.Stats() {
				if s.Watermark.IsZero() || s.Watermark.Equal(watermark.Max) {
					t.Errorf("vertex %s: watermark %v after a cancel; want the last event-time progress, not none nor the final one", s.Name, s.Watermark)
				}
			}
			for _, edge := range [][2]string{{"gen", "double"}, {"double", "sink"}} {
				if got := store.finals(t, p.Name(), edge[0], edge[1]); len(got) != 0 {
					t.Errorf("final WMBs on %s -> %s after a cancel: %v", edge[0], edge[1], got)
				}
			}
		})
	}
}

// watermarks lists each vertex's watermark, for a failure message.
func watermarks(p *pipeline.Pipeline) []string {
	var out []string
	for _, s := range p.Stats() {
		out = append(out, fmt.Sprintf("%s: %v", s.Name, s.Watermark))
	}
	return out
}
