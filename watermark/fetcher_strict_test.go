package watermark

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// step is one event of a strict-mode scenario, fed by hand to a fetcher.
type step struct {
	beat, del string // a heartbeat put, or deleted, by this processor
	wmb       string // this processor publishes w
	w         WMB
	advance   time.Duration
	// fetch: Fetch(0, at) must return strict in strict mode and loose
	// without it (the difference is what strict mode is for).
	fetch         bool
	at            int64
	strict, loose time.Time
}

func fetchAt(at int64, strict, loose time.Time) step {
	return step{fetch: true, at: at, strict: strict, loose: loose}
}

// TestStrictFetch runs each scenario on one edge written by a and b, once
// in strict mode (Processors: a, b) and once without, and checks every
// fetch against both.
func TestStrictFetch(t *testing.T) {
	var none time.Time
	cases := []struct {
		name  string
		steps []step
	}{{
		name: "holds with one of two known",
		steps: []step{
			{beat: "a"}, {wmb: "a", w: WMB{Offset: 1, Watermark: ms(100)}},
			fetchAt(10, none, ms(100)), // loose runs ahead on a alone
			{beat: "b"},
			fetchAt(10, none, ms(100)), // b heard, but nothing below 10 yet
			{wmb: "b", w: WMB{Offset: 2, Watermark: ms(50)}},
			fetchAt(10, ms(50), ms(100)), // what loose let b's data be late against
		},
	}, {
		name: "a processor only in the store's WMBs (killed) holds",
		steps: []step{
			{wmb: "b", w: WMB{Offset: 2, Watermark: ms(50)}}, // no heartbeat: its process is down
			{beat: "a"}, {wmb: "a", w: WMB{Offset: 1, Watermark: ms(100)}},
			{advance: 11 * time.Second}, {beat: "a"}, // the sweep drops b in loose mode
			fetchAt(10, ms(50), ms(100)),
		},
	}, {
		name: "holds while one is dead, advances when it comes back",
		steps: []step{
			{beat: "a"}, {beat: "b"},
			{wmb: "a", w: WMB{Offset: 1, Watermark: ms(100)}},
			{wmb: "b", w: WMB{Offset: 2, Watermark: ms(200)}},
			fetchAt(10, ms(100), ms(100)),
			{advance: 6 * time.Second}, {beat: "b"}, // a is killed
			{advance: 5 * time.Second}, {beat: "b"}, // its heartbeat timed out
			{wmb: "b", w: WMB{Offset: 12, Watermark: ms(300)}},
			fetchAt(20, ms(100), ms(300)),
			{beat: "a"}, // a restarted: its timeline still says 100
			fetchAt(20, ms(100), ms(300)),
			{wmb: "a", w: WMB{Offset: 15, Watermark: ms(250)}},
			fetchAt(20, ms(250), ms(300)),
		},
	}, {
		name: "holds while one is deleted, advances when it comes back",
		steps: []step{
			{beat: "a"}, {beat: "b"},
			{wmb: "a", w: WMB{Offset: 1, Watermark: ms(100)}},
			{wmb: "b", w: WMB{Offset: 2, Watermark: ms(200)}},
			fetchAt(10, ms(100), ms(100)),
			{del: "a"},
			{wmb: "b", w: WMB{Offset: 12, Watermark: ms(300)}},
			fetchAt(20, ms(100), ms(300)),
			{beat: "a"}, {wmb: "a", w: WMB{Offset: 15, Watermark: ms(400)}},
			fetchAt(20, ms(300), ms(300)),
		},
	}, {
		name: "an ended processor holds only before its end",
		steps: []step{
			{beat: "a"}, {beat: "b"},
			{wmb: "a", w: WMB{Offset: 1, Watermark: ms(100)}},
			{wmb: "b", w: WMB{Offset: 2, Watermark: ms(200)}},
			fetchAt(3, ms(100), ms(100)),
			// a ends: its end-of-stream message at offset 5, then Stop.
			{wmb: "a", w: WMB{Offset: 5, Watermark: Max, Idle: true}}, {del: "a"},
			fetchAt(5, ms(100), ms(200)), // offsets 3 and 4 may be a's, older than 200
			fetchAt(6, ms(200), ms(200)),
			{wmb: "b", w: WMB{Offset: 8, Watermark: ms(400)}},
			{advance: time.Hour}, {beat: "b"},
			fetchAt(10, ms(400), ms(400)),
		},
	}, {
		name: "both ended",
		steps: []step{
			{beat: "a"}, {beat: "b"},
			{wmb: "a", w: WMB{Offset: 1, Watermark: Max, Idle: true}}, {del: "a"},
			{wmb: "b", w: WMB{Offset: 2, Watermark: Max, Idle: true}}, {del: "b"},
			fetchAt(3, Max, none), // loose dropped both: nothing to compute on
		},
	}, {
		name: "a processor not expected is ignored",
		steps: []step{
			{beat: "a"}, {beat: "b"}, {beat: "old-7"},
			{wmb: "old-7", w: WMB{Offset: 1, Watermark: ms(10)}},
			{wmb: "a", w: WMB{Offset: 1, Watermark: ms(100)}},
			{wmb: "b", w: WMB{Offset: 1, Watermark: ms(200)}},
			fetchAt(5, ms(100), ms(10)),
			{wmb: "old-7", w: WMB{Offset: 2, Watermark: ms(20)}}, {del: "old-7"},
			fetchAt(5, ms(100), ms(100)), // loose dropped it only now
		},
	}}
	for _, tc := range cases {
		for _, strict := range []bool{true, false} {
			mode := "loose"
			if strict {
				mode = "strict"
			}
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				clock := newFakeClock()
				cfg := FetcherConfig{Edges: []string{"e"}, Partitions: []int{0}, Clock: clock.Now}
				if strict {
					cfg.Processors = map[string][]string{"e": {"a", "b"}}
				}
				f, err := NewFetcher(NewMemStore(), cfg)
				must(t, err)
				for i, s := range tc.steps {
					switch {
					case s.beat != "":
						beat(f, 0, s.beat, clock.Now())
					case s.del != "":
						f.apply(0, Update{Op: OpDelete, Key: heartbeatKey(s.del)})
					case s.wmb != "":
						feed(t, f, 0, s.wmb, s.w)
					case s.advance > 0:
						clock.Advance(s.advance)
					case s.fetch:
						want := s.loose
						if strict {
							want = s.strict
						}
						got := f.Fetch(0, s.at)
						if !got.Equal(want) {
							t.Fatalf("step %d: Fetch(0, %d) = %v, want %v", i, s.at, got, want)
						}
					}
				}
			})
		}
	}
}

// TestStrictIgnoredLoggedOnce: a processor not expected is listed by
// Ignored and logged once however often it writes.
func TestStrictIgnoredLoggedOnce(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	clock := newFakeClock()
	f, err := NewFetcher(NewMemStore(), FetcherConfig{Edges: []string{"e", "g"}, Partitions: []int{0},
		Clock: clock.Now, Logger: zap.New(core),
		Processors: map[string][]string{"e": {"a"}, "g": {"z"}}})
	must(t, err)
	for i := range 3 {
		beat(f, 0, "x", clock.Now())
		feed(t, f, 0, "x", WMB{Offset: int64(i + 1), Watermark: ms(10)})
		f.apply(0, Update{Op: OpDelete, Key: heartbeatKey("x")})
	}
	beat(f, 0, "w", clock.Now())
	if got := f.Ignored("e"); !slices.Equal(got, []string{"w", "x"}) {
		t.Fatalf("Ignored(e) = %q, want [w x]", got)
	}
	if got := f.Ignored("g"); len(got) != 0 {
		t.Fatalf("Ignored(g) = %q, want none", got)
	}
	if n := logs.FilterMessageSnippet("ignoring a processor").Len(); n != 2 {
		t.Fatalf("%d logs of ignored processors, want 2 (x and w, once each)", n)
	}
	if got := f.Live("e"); len(got) != 0 {
		t.Fatalf("Live(e) = %q, want none", got)
	}
}

// TestStrictTwoEdges: a join reads edge l (replicas l-0, l-1) and edge r
// (r-0); each edge counts only its own processors, and one missing on
// either holds the vertex.
func TestStrictTwoEdges(t *testing.T) {
	clock := newFakeClock()
	f, err := NewFetcher(NewMemStore(), FetcherConfig{Edges: []string{"l", "r"}, Partitions: []int{0, 1},
		Clock: clock.Now, Processors: map[string][]string{"l": {"l-0", "l-1"}, "r": {"r-0"}}})
	must(t, err)
	const left, right = 0, 1
	for part := range int32(2) {
		beat(f, left, "l-0", clock.Now())
		feed(t, f, left, "l-0", WMB{Offset: 1, Watermark: ms(100), Partition: part})
		beat(f, right, "r-0", clock.Now())
		feed(t, f, right, "r-0", WMB{Offset: 1, Watermark: ms(300), Partition: part})
		// r-0 on the left edge is not a writer there.
		feed(t, f, left, "r-0", WMB{Offset: 1, Watermark: ms(1000), Partition: part})
	}
	wantWM(t, "Fetch(0,5) without l-1", f.Fetch(0, 5), time.Time{})
	wantWM(t, "Fetch(1,5) without l-1", f.Fetch(1, 5), time.Time{})
	feed(t, f, left, "l-1", WMB{Offset: 2, Watermark: ms(200), Partition: 0})
	wantWM(t, "Fetch(0,5), l-1 on partition 0 only", f.Fetch(0, 5), time.Time{}) // partition 1 holds
	feed(t, f, left, "l-1", WMB{Offset: 2, Watermark: ms(250), Partition: 1})
	wantWM(t, "Fetch(1,5)", f.Fetch(1, 5), ms(100)) // left: min(100, 250 / 200)
	for _, p := range []int{0, 1} {
		wantWM(t, "right partition watermark", f.edges[right].last[p], ms(300))
	}
	if got := f.Ignored("l"); !slices.Equal(got, []string{"r-0"}) {
		t.Fatalf("Ignored(l) = %q, want [r-0]", got)
	}
	// l-0 is killed; l-1 and r-0 go on: the left edge holds at l-0's 100.
	clock.Advance(11 * time.Second)
	for part := range int32(2) {
		beat(f, left, "l-1", clock.Now())
		feed(t, f, left, "l-1", WMB{Offset: 6, Watermark: ms(500), Partition: part})
		beat(f, right, "r-0", clock.Now())
		feed(t, f, right, "r-0", WMB{Offset: 6, Watermark: ms(600), Partition: part})
	}
	if got := f.Live("l"); !slices.Equal(got, []string{"l-1"}) {
		t.Fatalf("Live(l) = %q, want [l-1]", got)
	}
	wantWM(t, "Fetch(0,9) with l-0 dead", f.Fetch(0, 9), ms(100))
	wantWM(t, "Fetch(1,9) with l-0 dead", f.Fetch(1, 9), ms(100))
	// l-0 back: it publishes both partitions and the vertex follows r-0 and l-1.
	beat(f, left, "l-0", clock.Now())
	feed(t, f, left, "l-0", WMB{Offset: 7, Watermark: ms(700), Partition: 0})
	wantWM(t, "Fetch(0,9) l-0 back on partition 0", f.Fetch(0, 9), ms(100)) // partition 1 holds
	feed(t, f, left, "l-0", WMB{Offset: 7, Watermark: ms(800), Partition: 1})
	wantWM(t, "Fetch(1,9) l-0 back", f.Fetch(1, 9), ms(500)) // min(l: 500, r: 600) on both
	wantWM(t, "Fetch(0,9)", f.Fetch(0, 9), ms(500))
}

// TestStrictWaitForProcessors: in strict mode WaitForProcessors waits for
// every expected processor to be heard of, by heartbeat or WMB, and
// ignores n.
func TestStrictWaitForProcessors(t *testing.T) {
	clock := newFakeClock()
	f, err := NewFetcher(NewMemStore(), FetcherConfig{Edges: []string{"e", "g"}, Partitions: []int{0},
		Clock: clock.Now, Processors: map[string][]string{"e": {"a", "b", "c"}, "g": {"z"}}})
	must(t, err)
	beat(f, 0, "a", clock.Now())
	beat(f, 0, "x", clock.Now()) // not expected: does not count
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	const want = "watermark: waiting for upstream processors of e (not heard: b c), g (not heard: z): context canceled"
	if err := f.WaitForProcessors(canceled, 1); !errors.Is(err, context.Canceled) || err.Error() != want {
		t.Fatalf("WaitForProcessors = %v, want %s", err, want)
	}
	done := make(chan error, 1)
	go func() { done <- f.WaitForProcessors(t.Context(), 99) }()
	feed(t, f, 0, "b", WMB{Offset: 1, Watermark: ms(1)})               // a WMB is enough (its process is down)
	feed(t, f, 0, "c", WMB{Offset: 1, Watermark: ms(1), Partition: 3}) // of a partition another reader reads, too
	f.apply(0, Update{Op: OpDelete, Key: heartbeatKey("a")})           // heard before, dead now: still heard
	beat(f, 1, "z", clock.Now())
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(30 * time.Second): // a bound against a hang, not a timing assertion
		t.Fatal("WaitForProcessors did not return after every processor was heard")
	}
}

func TestStrictConfigErrors(t *testing.T) {
	cases := map[string]map[string][]string{
		"empty map":        {},
		"edge missing":     {"e": {"a"}},
		"empty list":       {"e": {"a"}, "g": {}},
		"unknown bucket":   {"e": {"a"}, "g": {"z"}, "h": {"y"}},
		"bad name":         {"e": {"a.b"}, "g": {"z"}},
		"duplicate name":   {"e": {"a", "b", "a"}, "g": {"z"}},
		"empty name":       {"e": {""}, "g": {"z"}},
		"unknown and miss": {"h": {"a"}},
	}
	for name, procs := range cases {
		_, err := NewFetcher(NewMemStore(), FetcherConfig{Edges: []string{"e", "g"}, Partitions: []int{0}, Processors: procs})
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig", name, err)
		}
	}
	// The caller's slices are not kept (they are sorted in a copy).
	names := []string{"b", "a"}
	_, err := NewFetcher(NewMemStore(), FetcherConfig{Edges: []string{"e"}, Partitions: []int{0},
		Processors: map[string][]string{"e": names}})
	must(t, err)
	if !slices.Equal(names, []string{"b", "a"}) {
		t.Fatalf("the caller's names were reordered: %q", names)
	}
}

// TestStrictFetcherWithStore runs the real path: publishers put into a
// MemStore, started fetchers watch it. b stops (its heartbeat deleted) and
// the edge holds at its last WMB; a fetcher started after b stopped learns
// b from the store and holds too; b restarted under its name releases both.
func TestStrictFetcherWithStore(t *testing.T) {
	ctx := t.Context()
	clock := newFakeClock()
	store := NewMemStore()
	pub := func(name string) *Publisher {
		p, err := NewPublisher(store, PublisherConfig{
			Processor: name, Edges: []PublisherEdge{{Bucket: "e", Partitions: 1}},
			HeartbeatInterval: time.Hour, Clock: clock.Now,
		})
		must(t, err)
		must(t, p.Start(ctx))
		return p
	}
	fetcher := func() *Fetcher {
		f, err := NewFetcher(store, FetcherConfig{Edges: []string{"e"}, Partitions: []int{0}, Clock: clock.Now,
			Processors: map[string][]string{"e": {"a", "b"}}})
		must(t, err)
		must(t, f.Start(ctx))
		return f
	}
	a, b := pub("a"), pub("b")
	defer func() { must(t, a.Stop(ctx)) }()
	must(t, a.Publish("e", 0, 1, ms(100)))
	must(t, b.Publish("e", 0, 2, ms(50)))
	must(t, a.Flush(ctx))
	must(t, b.Flush(ctx))
	f1 := fetcher()
	defer f1.Stop()
	wantWM(t, "Fetch after Start", f1.Fetch(0, 10), ms(50))

	must(t, b.Stop(ctx))
	waitFor(t, f1, func() bool { return len(f1.Live("e")) == 1 })
	must(t, a.Publish("e", 0, 11, ms(300)))
	must(t, a.Flush(ctx))
	waitFor(t, f1, func() bool {
		f1.mu.Lock()
		defer f1.mu.Unlock()
		w, _ := f1.edges[0].procs[slices.IndexFunc(f1.edges[0].procs, func(p *procState) bool { return p.name == "a" })].timelines[0].newest()
		return w.Offset == 11
	})
	wantWM(t, "Fetch with b stopped", f1.Fetch(0, 20), ms(50))

	f2 := fetcher() // b is only a WMB in the store now
	defer f2.Stop()
	must(t, f2.WaitForProcessors(ctx, 2))
	if got := f2.Live("e"); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("Live = %q, want [a]", got)
	}
	wantWM(t, "second fetcher, b stopped", f2.Fetch(0, 20), ms(50))

	b2 := pub("b")
	defer func() { must(t, b2.Stop(ctx)) }()
	must(t, b2.Publish("e", 0, 15, ms(250)))
	must(t, b2.Flush(ctx))
	for _, f := range []*Fetcher{f1, f2} {
		waitFor(t, f, func() bool { return f.Fetch(0, 20).Equal(ms(250)) })
	}
}
