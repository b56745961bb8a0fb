package watermark

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// newTestFetcher returns a fetcher that is fed by hand (apply), not started.
func newTestFetcher(t *testing.T, clock *fakeClock, edges []string, partitions []int) *Fetcher {
	t.Helper()
	f, err := NewFetcher(NewMemStore(), FetcherConfig{
		Edges: edges, Partitions: partitions, TimelineLength: 4,
		HeartbeatTimeout: 10 * time.Second, Clock: clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func beat(f *Fetcher, edge int, proc string, now time.Time) {
	f.apply(edge, Update{Op: OpPut, Key: heartbeatKey(proc), Value: encodeHeartbeat(now)})
}

func feed(t *testing.T, f *Fetcher, edge int, proc string, w WMB) {
	t.Helper()
	b, err := w.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	f.apply(edge, Update{Op: OpPut, Key: wmbKey(proc, int(w.Partition)), Value: b})
}

func wantWM(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) || got.IsZero() != want.IsZero() {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func TestFetchTimelineAndMinOverProcessors(t *testing.T) {
	clock := newFakeClock()
	f := newTestFetcher(t, clock, []string{"e"}, []int{0})
	beat(f, 0, "a", clock.Now())
	beat(f, 0, "b", clock.Now())
	feed(t, f, 0, "a", WMB{Offset: 10, Watermark: ms(100)})
	feed(t, f, 0, "a", WMB{Offset: 20, Watermark: ms(200)})
	wantWM(t, "Fetch(0,15) with b silent", f.Fetch(0, 15), time.Time{})
	feed(t, f, 0, "b", WMB{Offset: 12, Watermark: ms(150)})
	wantWM(t, "Fetch(0,15)", f.Fetch(0, 15), ms(100))       // a: 100 (below 15: offset 10), b: 150
	wantWM(t, "Fetch(0,25)", f.Fetch(0, 25), ms(150))       // a: 200, b: 150
	wantWM(t, "Fetch(0,13) later", f.Fetch(0, 13), ms(150)) // never decreases
	wantWM(t, "Watermark", f.Watermark(), ms(150))
	// A partition this reader does not read changes nothing.
	wantWM(t, "Fetch(7,100)", f.Fetch(7, 100), ms(150))
}

func TestFetchMinOverPartitionsAndEdges(t *testing.T) {
	clock := newFakeClock()
	f := newTestFetcher(t, clock, []string{"left", "right"}, []int{0, 2})
	for e, p := range []string{"l0", "r0"} {
		beat(f, e, p, clock.Now())
	}
	feed(t, f, 0, "l0", WMB{Offset: 1, Watermark: ms(500), Partition: 0})
	feed(t, f, 0, "l0", WMB{Offset: 1, Watermark: ms(300), Partition: 2})
	feed(t, f, 1, "r0", WMB{Offset: 1, Watermark: ms(400), Partition: 0})
	feed(t, f, 1, "r0", WMB{Offset: 1, Watermark: ms(700), Partition: 2})
	// Partition 0 alone: partition 2 has no watermark yet, so the vertex has none.
	wantWM(t, "Fetch(0,5)", f.Fetch(0, 5), time.Time{})
	// Partition 2: left 300, right 700 -> 300; partition 0: min(500, 400) = 400.
	wantWM(t, "Fetch(2,5)", f.Fetch(2, 5), ms(300))
	// Partition 1 is another reader's: its WMBs are ignored.
	feed(t, f, 0, "l0", WMB{Offset: 1, Watermark: ms(1), Partition: 1})
	wantWM(t, "Fetch(2,6)", f.Fetch(2, 6), ms(300))
	feed(t, f, 0, "l0", WMB{Offset: 3, Watermark: ms(900), Partition: 2})
	// Partition 2 now: left 900, right 700 -> 700; vertex: min(400, 700).
	wantWM(t, "Fetch(2,6) after left advanced", f.Fetch(2, 6), ms(400))
}

func TestFetchOutOfOrderWMBs(t *testing.T) {
	clock := newFakeClock()
	f := newTestFetcher(t, clock, []string{"e"}, []int{0})
	beat(f, 0, "a", clock.Now())
	feed(t, f, 0, "a", WMB{Offset: 20, Watermark: ms(200)})
	feed(t, f, 0, "a", WMB{Offset: 10, Watermark: ms(100)}) // late, stale: ignored
	feed(t, f, 0, "a", WMB{Offset: 30, Watermark: ms(150)}) // backwards: ignored
	wantWM(t, "Fetch(0,35)", f.Fetch(0, 35), ms(200))
	wantWM(t, "Fetch(0,15)", f.Fetch(0, 15), ms(200)) // nothing below 15, and never decreases
	got := []time.Time{}
	for _, off := range []int64{21, 5, 40} {
		got = append(got, f.Fetch(0, off))
	}
	if !slices.IsSortedFunc(got, func(a, b time.Time) int { return a.Compare(b) }) {
		t.Fatalf("watermarks went backwards: %v", got)
	}
}

func TestFetchDropsDeadProcessors(t *testing.T) {
	clock := newFakeClock()
	f := newTestFetcher(t, clock, []string{"e"}, []int{0})
	beat(f, 0, "a", clock.Now())
	beat(f, 0, "b", clock.Now())
	feed(t, f, 0, "a", WMB{Offset: 1, Watermark: ms(500)})
	feed(t, f, 0, "b", WMB{Offset: 2, Watermark: ms(100)})
	wantWM(t, "Fetch with both", f.Fetch(0, 10), ms(100))

	clock.Advance(6 * time.Second)
	beat(f, 0, "a", clock.Now()) // a keeps beating, b goes silent
	clock.Advance(5 * time.Second)
	if got := f.Live("e"); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("Live = %q, want [a]", got)
	}
	wantWM(t, "Fetch before the next change", f.Fetch(0, 10), ms(100))
	beat(f, 0, "a", clock.Now()) // the next heartbeat sweeps b out
	wantWM(t, "Fetch with b dead", f.Fetch(0, 10), ms(500))

	// A processor that deletes its heartbeat (clean stop) is dropped at once.
	beat(f, 0, "c", clock.Now())
	feed(t, f, 0, "c", WMB{Offset: 3, Watermark: ms(600)})
	feed(t, f, 0, "a", WMB{Offset: 4, Watermark: ms(700)})
	wantWM(t, "Fetch with a and c", f.Fetch(0, 10), ms(600))
	f.apply(0, Update{Op: OpDelete, Key: heartbeatKey("c")})
	wantWM(t, "Fetch after c stopped", f.Fetch(0, 10), ms(700))

	// An edge left with no live processor holds its watermark.
	clock.Advance(11 * time.Second)
	wantWM(t, "Fetch with nobody live", f.Fetch(0, 10), ms(700))
	if got := f.Live("e"); len(got) != 0 {
		t.Fatalf("Live = %q, want none", got)
	}
	// A WMB without a heartbeat does not make a processor live...
	feed(t, f, 0, "ghost", WMB{Offset: 5, Watermark: ms(50)})
	wantWM(t, "Fetch with a ghost", f.Fetch(0, 10), ms(700))
	// ...until its heartbeat follows: its earlier WMB was kept.
	beat(f, 0, "ghost", clock.Now())
	if got := f.Live("e"); !slices.Equal(got, []string{"ghost"}) {
		t.Fatalf("Live = %q, want [ghost]", got)
	}
	wantWM(t, "Fetch with the ghost live", f.Fetch(0, 10), ms(700)) // 50 < 700: never decreases
	wantWM(t, "partition watermark", f.edges[0].last[0], ms(700))
}

// A processor taken for dead that heartbeats again (it was only slow)
// counts again with the WMBs it published before: it need not publish a
// new one (a publisher publishes only changes) for the edge to advance.
func TestFetchRevivedProcessorKeepsItsTimeline(t *testing.T) {
	clock := newFakeClock()
	f := newTestFetcher(t, clock, []string{"e"}, []int{0})
	beat(f, 0, "a", clock.Now())
	beat(f, 0, "b", clock.Now())
	feed(t, f, 0, "a", WMB{Offset: 1, Watermark: ms(500)})
	feed(t, f, 0, "b", WMB{Offset: 2, Watermark: ms(2000)})
	wantWM(t, "Fetch with both", f.Fetch(0, 10), ms(500))
	clock.Advance(11 * time.Second)
	beat(f, 0, "a", clock.Now()) // sweeps b
	if got := f.Live("e"); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("Live = %q, want [a]", got)
	}
	beat(f, 0, "b", clock.Now()) // b was slow, not dead
	if got := f.Live("e"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Live after b's heartbeat = %q, want [a b]", got)
	}
	feed(t, f, 0, "a", WMB{Offset: 3, Watermark: ms(900)})
	wantWM(t, "Fetch with b revived", f.Fetch(0, 10), ms(900)) // min(900, b's 2000)
}

func TestFetchIdlePartition(t *testing.T) {
	clock := newFakeClock()
	f := newTestFetcher(t, clock, []string{"e"}, []int{0, 1})
	beat(f, 0, "a", clock.Now())
	feed(t, f, 0, "a", WMB{Offset: 3, Watermark: ms(300), Partition: 0})
	feed(t, f, 0, "a", WMB{Offset: 0, Watermark: ms(100), Partition: 1})
	wantWM(t, "Fetch(0,4)", f.Fetch(0, 4), time.Time{}) // partition 1 unread
	wantWM(t, "Fetch(1,1)", f.Fetch(1, 1), ms(100))
	// Partition 1 goes idle: control message at offset 1, idle WMBs there.
	feed(t, f, 0, "a", WMB{Offset: 1, Watermark: ms(250), Idle: true, Partition: 1})
	// The reader reads the control message (offset 1): nothing below 1 changed.
	wantWM(t, "Fetch(1,1) control", f.Fetch(1, 1), ms(100))
	// Empty reads after it: the idle WMB below offset 2 applies.
	wantWM(t, "FetchIdle(1,2)", f.FetchIdle(1, 2), ms(250))
	feed(t, f, 0, "a", WMB{Offset: 1, Watermark: ms(400), Idle: true, Partition: 1})
	wantWM(t, "FetchIdle(1,2) advanced", f.FetchIdle(1, 2), ms(300)) // partition 0 bounds it
}

func TestFetcherConfigErrors(t *testing.T) {
	cases := map[string]FetcherConfig{
		"no edges":          {Partitions: []int{0}},
		"bad edge":          {Edges: []string{"a.b"}, Partitions: []int{0}},
		"duplicate edge":    {Edges: []string{"a", "a"}, Partitions: []int{0}},
		"no partitions":     {Edges: []string{"a"}},
		"negative":          {Edges: []string{"a"}, Partitions: []int{-1}},
		"duplicate part":    {Edges: []string{"a"}, Partitions: []int{1, 1}},
		"huge partition":    {Edges: []string{"a"}, Partitions: []int{1 << 30}},
		"negative timeline": {Edges: []string{"a"}, Partitions: []int{0}, TimelineLength: -1},
		"negative timeout":  {Edges: []string{"a"}, Partitions: []int{0}, HeartbeatTimeout: -time.Second},
	}
	for name, c := range cases {
		if _, err := NewFetcher(NewMemStore(), c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig", name, err)
		}
	}
	if _, err := NewFetcher(nil, FetcherConfig{Edges: []string{"a"}, Partitions: []int{0}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("nil store: err = %v", err)
	}
}

// TestFetcherWithStore runs the real path: publishers put into a MemStore,
// a started fetcher watches it.
func TestFetcherWithStore(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	store := NewMemStore()
	pub := func(name string) *Publisher {
		p, err := NewPublisher(store, PublisherConfig{
			Processor: name, Edges: []PublisherEdge{{Bucket: "e", Partitions: 1}},
			HeartbeatInterval: time.Hour, Clock: clock.Now,
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := pub("a")
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Stop(ctx)
	if err := a.Publish("e", 0, 10, ms(100)); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(ctx); err != nil { // the WMB is in the store
		t.Fatal(err)
	}

	f, err := NewFetcher(store, FetcherConfig{Edges: []string{"e"}, Partitions: []int{0}, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	// Start returned after the initial contents: a is known already.
	wantWM(t, "Fetch after Start", f.Fetch(0, 11), ms(100))

	b := pub("b")
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	started := make(chan error)
	go func() { started <- b.Start(ctx) }()
	if err := f.WaitForProcessors(waitCtx, 2); err != nil {
		t.Fatal(err)
	}
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if got := f.Live("e"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Live = %q", got)
	}
	// b stops cleanly: the fetcher drops it without waiting for the timeout.
	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, f, func() bool { return len(f.Live("e")) == 1 })

	short, cancelShort := context.WithCancel(ctx)
	cancelShort()
	if err := f.WaitForProcessors(short, 3); !errors.Is(err, context.Canceled) ||
		err.Error() != "watermark: waiting for upstream processors of e (1 of 3): context canceled" {
		t.Fatalf("WaitForProcessors = %v", err)
	}
	if err := f.Start(ctx); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start = %v, want ErrStarted", err)
	}
	f.Stop()
	f.Stop() // idempotent
}

// waitFor waits until cond holds, re-checking after each change the
// fetcher applies. The 30s bound only turns a bug into a failure instead of
// a hang; nothing is asserted about timing.
func waitFor(t *testing.T, f *Fetcher, cond func() bool) {
	t.Helper()
	giveUp := time.After(30 * time.Second)
	for {
		f.mu.Lock()
		ch := f.changed
		f.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-giveUp:
			t.Fatal("condition not reached after the store changes stopped")
		}
	}
}

// TestFetchReaderFarBehind: a reader 500 WMBs behind its upstream (with a
// bound of 4096) gets each message's own watermark as it catches up: the
// timelines keep what it has not read past. With a ring of the newest 10,
// every Fetch below the last 10 WMBs found nothing and the watermark stood
// still until the reader caught up.
func TestFetchReaderFarBehind(t *testing.T) {
	clock := newFakeClock()
	f, err := NewFetcher(NewMemStore(), FetcherConfig{Edges: []string{"e"}, Partitions: []int{0}, Clock: clock.Now})
	must(t, err)
	beat(f, 0, "a", clock.Now())
	const behind = 500
	for i := int64(1); i <= behind; i++ {
		feed(t, f, 0, "a", WMB{Offset: 10 * i, Watermark: ms(100 * i)})
	}
	for i := int64(1); i <= behind; i++ {
		wantWM(t, fmt.Sprintf("Fetch(0, %d)", 10*i+1), f.Fetch(0, 10*i+1), ms(100*i))
	}
}
