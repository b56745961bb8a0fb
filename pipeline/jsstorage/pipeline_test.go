package jsstorage_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/pipeline/jsstorage"
	"github.com/runnel-dev/runnel/vertex"
)

// The pipeline of these tests: a generator of pN messages over pKeys keys,
// pSpacing of event time apart, through a map (which cancels the run once
// it has seen message stopAt) into a fixed-window count per key, into a
// sink that collects the results, all on jsstorage.
const (
	pN       = 20_000
	pKeys    = 8
	pSpacing = 100 * time.Microsecond
	pWindow  = 200 * time.Millisecond
	// pCapacity keeps the generator close to the map, so that it is still
	// generating when the map cancels the first run of the resume test.
	pCapacity = 4000
)

var pBase = time.Unix(1_800_000_000, 0)

// countRun runs the pipeline on st once and adds its results, by "window
// start/key", to got; a result emitted twice, in this run or an earlier
// one, is an error.
func countRun(t *testing.T, st *jsstorage.Storage, stopAt int64, got map[string]int64, opts ...pipeline.Option) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := pipeline.New("counts", append([]pipeline.Option{pipeline.WithStorage(st)}, opts...)...)
	gen := pipeline.Source(p, "gen", vertex.Generator(func(i int64) int64 { return i }).WithCount(pN).WithKeys(pKeys).
		WithEventTime(func(i int64) time.Time { return pBase.Add(time.Duration(i) * pSpacing) }))
	var once sync.Once
	passed := pipeline.Map(p, "pass", gen, func(_ context.Context, v int64) (int64, error) {
		if stopAt >= 0 && v >= stopAt {
			once.Do(cancel)
		}
		return v, nil
	}, vertex.BufferCapacity(pCapacity))
	res, _ := pipeline.Reduce(p, "count", passed, vertex.Fixed(pWindow), vertex.Counting[int64](), vertex.Partitions(2), vertex.Replicas(2))
	var mu sync.Mutex
	pipeline.Sink(p, "out", res, vertex.Func(func(_ context.Context, ms []vertex.Message[vertex.Windowed[int64]]) error {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range ms {
			k := fmt.Sprintf("%d/%s", m.Value.Window.Start.Sub(pBase).Milliseconds(), m.Value.Keys[0])
			if old, dup := got[k]; dup {
				t.Errorf("window %s emitted twice: %d, then %d", k, old, m.Value.Value)
			}
			got[k] = m.Value.Value
		}
		return nil
	}))
	return p.Run(ctx)
}

// countOracle is the count of every window and key of the generator's
// input, computed without runnel.
func countOracle() map[string]int64 {
	want := map[string]int64{}
	for i := range int64(pN) {
		at := time.Duration(i) * pSpacing
		want[fmt.Sprintf("%d/k%d", at.Truncate(pWindow).Milliseconds(), i%pKeys)]++
	}
	return want
}

func compareCounts(t *testing.T, got, want map[string]int64) {
	t.Helper()
	bad := 0
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok || g != want[k] {
			bad++
			t.Errorf("window %s: count %d (present %v), want %d", k, g, ok, want[k])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			bad++
			t.Errorf("window %s: count %d, not in the input", k, got[k])
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d results wrong", bad, len(want))
	}
}

// TestPipelineCountsOnJetStream runs generator -> map -> fixed-window count
// -> sink with its buffers, source state and watermarks in JetStream and
// its reduce log on disk: every window and key has exactly the count of
// its input.
func TestPipelineCountsOnJetStream(t *testing.T) {
	srv := natstest.Start(t)
	st := newStorage(t, srv)
	wm, err := st.Watermarks("counts")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	start := time.Now()
	if err := countRun(t, st, -1, got, pipeline.Watermarks(pipeline.WatermarkConfig{Store: wm})); err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("%d messages, %d results in %v", pN, len(got), time.Since(start))
	compareCounts(t, got, countOracle())
}

// TestPipelineResumesOnJetStream runs the pipeline twice on the same
// storage: the first run is cancelled once the map saw a quarter of the input,
// the second runs to the end. The second resumes the generator, the
// buffers and the open windows: every window and key is emitted once, in
// one run or the other, with the count of its input.
func TestPipelineResumesOnJetStream(t *testing.T) {
	srv := natstest.Start(t)
	st := newStorage(t, srv)
	got := map[string]int64{}
	if err := countRun(t, st, pN/4, got); err != nil {
		t.Fatalf("first run: %v", err)
	}
	first := len(got)
	if err := countRun(t, st, -1, got); err != nil {
		t.Fatalf("second run: %v", err)
	}
	t.Logf("results: %d in the first run, %d in both", first, len(got))
	// The map's buffer capacity holds the generator within 4000 messages of
	// the map, so the first run cannot have read the windows past 9000.
	if first == len(got) {
		t.Errorf("the first run emitted all %d results: it did not stop early", first)
	}
	compareCounts(t, got, countOracle())
}
