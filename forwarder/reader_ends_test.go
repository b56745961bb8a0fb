package forwarder

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// TestReaderLearnsOfAnEndStoredAfterItStarted: a map replica restarted
// after it committed past both upstream ends, before the second upstream's
// final WMB is in the store (an upstream writes its end to the buffer
// first), ends once the store shows it, without any more data, and ends
// its own output: Input.Ended is asked again while the reader waits, and a
// found end wakes its Pull. It does not end before.
func TestReaderLearnsOfAnEndStoredAfterItStarted(t *testing.T) {
	ctx := context.Background()
	in, out := newTopic(t, "in", isb.Partitions(2)), newTopic(t, "out")
	for p := range 2 {
		if _, err := in.Producer(nil).ProduceTo(ctx, p, []msg{{ID: "a", Value: p}, {ID: "b", Value: p}}); err != nil {
			t.Fatal(err)
		}
	}
	// Two upstream processors end both partitions: offsets 2 and 3.
	w := NewWriter([]Edge[int]{{To: "map", Topic: in}}, &Counters{}, nil, nil)
	for _, proc := range []string{"src/0", "src/1"} {
		if err := w.WriteEnd(ctx, proc, Final); err != nil {
			t.Fatal(err)
		}
	}
	// The replica's earlier run read and committed everything.
	earlier, err := in.PullConsumer("map", isb.BatchSize(10))
	if err != nil {
		t.Fatal(err)
	}
	for in.Pending("map") > 0 {
		if _, err := earlier.Pull(ctx); err != nil {
			t.Fatal(err)
		}
		if err := earlier.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if err := earlier.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := in.PullConsumer("map", isb.ManualCommit(), isb.BatchSize(4))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// The store: src/0's final WMBs from the start, src/1's only once
	// stored is set.
	var stored atomic.Bool
	var asked atomic.Int64
	ended := func(int) map[string]int64 {
		asked.Add(1)
		if stored.Load() {
			return map[string]int64{"src/0": 2, "src/1": 3}
		}
		return map[string]int64{"src/0": 2}
	}
	opts, err := NewOptions(vertex.BatchSize(4))
	if err != nil {
		t.Fatal(err)
	}
	rec := &endRecorder{}
	hooks := rec.hooks()
	hooks.IdleInterval = 5 * time.Millisecond
	cfg := Config{Vertex: "map", Options: opts, Counters: &Counters{}, Hooks: hooks}
	bound, cancel := context.WithTimeout(ctx, time.Minute) // a broken build's bound only
	defer cancel()
	done := make(chan error, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		done <- RunMap(bound, bound, cfg, Input[int]{Consumer: c, Partitions: 2, Writers: 2, Ended: ended},
			[]Edge[int]{{To: "out", Topic: out}}, FromValueFunc(func(_ context.Context, v int) (int, error) { return v, nil }))
	})

	// Asked at the start and at least twice more while waiting, it has not
	// ended: one of two ends per partition is known.
	for asked.Load() < 2+2*2 && bound.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	if bound.Err() != nil {
		t.Fatalf("Input.Ended was asked %d times; want it asked again while the reader waits", asked.Load())
	}
	select {
	case err := <-done:
		t.Fatalf("the replica ended (%v) before the store showed its second upstream's end", err)
	default:
	}
	stored.Store(true)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RunMap: %v", err)
		}
	case <-bound.Done():
		t.Fatal("the replica did not learn of the end stored after it started")
	}
	data, control := splitEnds(readAll(t, out))
	if len(data) != 0 {
		t.Errorf("the replica wrote %d messages, want 0 (everything was committed)", len(data))
	}
	if len(control) != 1 || control[0].ID != cfg.Processor() || !control[0].HasTag(EndTag) {
		t.Errorf("its output's ends: %v; want one final end of %s", control, cfg.Processor())
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.ended) != 2 {
		t.Errorf("partitions ended %v, want both", rec.ended)
	}
}
