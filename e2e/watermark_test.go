package e2e

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/watermark"
)

// wmBase is the event time the watermark tests start at.
var wmBase = time.Unix(1_700_000_000, 0).UTC()

// fakeClock is the watermarks' injected clock; tests move it by hand.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock(at time.Time) *fakeClock {
	c := &fakeClock{}
	c.ns.Store(at.UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// partitionedSource gives every source replica its own list of messages,
// exactly max per Read, so that the batches, and with them the source
// watermark and the late messages, are known in advance. Each read first
// waits pace, so that watermarks flow while data does and the run spans
// many heartbeats.
type partitionedSource struct {
	parts [][]vertex.Message[int]
	pace  time.Duration
	mu    sync.Mutex
	next  []int
}

func (s *partitionedSource) Read(ctx context.Context, max int) ([]vertex.Message[int], error) {
	r, ok := vertex.ReplicaFrom(ctx)
	if !ok {
		return nil, fmt.Errorf("source read without a replica")
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(s.pace):
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	part, at := s.parts[r.Index], s.next[r.Index]
	if at >= len(part) {
		return nil, io.EOF
	}
	end := min(at+max, len(part))
	s.next[r.Index] = end
	return slices.Clone(part[at:end]), nil
}

// monotonic records, per vertex replica, the watermarks a function saw in
// order, and counts any that went backwards.
type monotonic struct {
	mu      sync.Mutex
	last    map[vertex.Replica]time.Time
	back    []string
	nonZero int
}

func newMonotonic() *monotonic { return &monotonic{last: map[vertex.Replica]time.Time{}} }

func (m *monotonic) see(ctx context.Context, msg vertex.Message[int]) {
	r, _ := vertex.ReplicaFrom(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	if msg.Watermark.Before(m.last[r]) {
		m.back = append(m.back, fmt.Sprintf("%s/%d: message %s watermark %v after %v", r.Vertex, r.Index, msg.ID, msg.Watermark, m.last[r]))
	}
	m.last[r] = msg.Watermark
	if !msg.Watermark.IsZero() {
		m.nonZero++
	}
}

// sampleWatermarks samples p.Stats until stop is closed and reports every
// vertex watermark that went backwards between two samples, or passed
// bound without being the final watermark (watermark.Max, which only the
// end of stream brings).
func sampleWatermarks(p *pipeline.Pipeline, bound time.Time, stop <-chan struct{}) (done <-chan []string) {
	out := make(chan []string, 1)
	go func() {
		var back []string
		last := map[string]time.Time{}
		for {
			for _, s := range p.Stats() {
				if s.Watermark.Before(last[s.Name]) {
					back = append(back, fmt.Sprintf("%s: %v after %v", s.Name, s.Watermark, last[s.Name]))
				}
				if s.Watermark.After(bound) && !s.Watermark.Equal(watermark.Max) {
					back = append(back, fmt.Sprintf("%s: %v is past %v", s.Name, s.Watermark, bound))
				}
				last[s.Name] = s.Watermark
			}
			select {
			case <-stop:
				out <- back
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return out
}

// TestWatermarksThroughPipeline runs source -> map -> map -> sink, every
// vertex with two replicas and several partitions, on event times that are
// out of order and sometimes far behind. At the sink, every message that
// is not late has a watermark at most its event time; the late messages
// are exactly those the source watermark formula makes late; no replica
// sees its watermark go backwards and no vertex's reported watermark does,
// nor passes the last event time minus the delay until the end of stream
// brings every vertex to the final watermark (watermark.Max).
func TestWatermarksThroughPipeline(t *testing.T) {
	const (
		perPart  = 1500
		batch    = 10
		maxDelay = 10 * time.Millisecond
	)
	src := &partitionedSource{parts: make([][]vertex.Message[int], 2), next: make([]int, 2), pace: time.Millisecond}
	wantLate := map[string]bool{}
	var maxET time.Time
	for r := range 2 {
		var wm time.Time
		for i := range perPart {
			et := wmBase.Add(time.Duration(i)*time.Millisecond + time.Duration((i*37+r*11)%25-12)*time.Millisecond)
			if i%100 == 99 {
				et = et.Add(-400 * time.Millisecond) // far behind
			}
			id := fmt.Sprintf("%d-%d", r, i)
			src.parts[r] = append(src.parts[r], vertex.Message[int]{ID: id, EventTime: et, Value: i})
			if et.After(maxET) {
				maxET = et
			}
		}
		// The source watermark per batch: max(previous, min - maxDelay).
		for b := 0; b < perPart; b += batch {
			msgs := src.parts[r][b:min(b+batch, perPart)]
			low := msgs[0].EventTime
			for _, m := range msgs {
				if m.EventTime.Before(low) {
					low = m.EventTime
				}
			}
			if c := low.Add(-maxDelay); c.After(wm) {
				wm = c
			}
			for _, m := range msgs {
				if m.EventTime.Before(wm) {
					wantLate[m.ID] = true
				}
			}
		}
	}
	if len(wantLate) == 0 {
		t.Fatal("the data has no late message: the test would not check lateness")
	}

	p := pipeline.New("wm-chain", pipeline.Watermarks(pipeline.WatermarkConfig{
		MaxDelay: maxDelay, Throttle: time.Nanosecond, IdleInterval: time.Millisecond, HeartbeatInterval: 10 * time.Millisecond,
	}))
	seen := newMonotonic()
	pass := func(ctx context.Context, m vertex.Message[int]) ([]vertex.Message[int], error) {
		seen.see(ctx, m)
		return []vertex.Message[int]{vertex.Derive(m, m.Value)}, nil
	}
	s := pipeline.Source(p, "src", vertex.Source[int](src), vertex.Replicas(2), vertex.BatchSize(batch))
	m1 := pipeline.FlatMap(p, "m1", s, pass, vertex.Replicas(2), vertex.Partitions(2), vertex.Concurrency(1), vertex.BatchSize(8))
	m2 := pipeline.FlatMap(p, "m2", m1, pass, vertex.Replicas(2), vertex.Partitions(3), vertex.Concurrency(1), vertex.BatchSize(8))
	var mu sync.Mutex
	got := map[string]vertex.Message[int]{}
	sinkWM := 0 // sink messages with a watermark
	pipeline.Sink(p, "sink", m2, vertex.Func(func(ctx context.Context, msgs []vertex.Message[int]) error {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			seen.see(ctx, m)
			if _, dup := got[m.ID]; dup {
				return fmt.Errorf("message %s delivered twice", m.ID)
			}
			got[m.ID] = m
			if !m.Watermark.IsZero() {
				sinkWM++
			}
		}
		return nil
	}), vertex.Replicas(2), vertex.Partitions(2), vertex.Concurrency(1))

	stop := make(chan struct{})
	sampled := sampleWatermarks(p, maxET.Add(-maxDelay), stop)
	run(t, p, 90*time.Second)
	close(stop)
	for _, b := range <-sampled {
		t.Errorf("Stats watermark went backwards or too far: %s", b)
	}
	for _, b := range seen.back {
		t.Errorf("per-message watermark went backwards: %s", b)
	}
	checkDrained(t, p)

	if len(got) != 2*perPart {
		t.Fatalf("sink got %d messages, want %d", len(got), 2*perPart)
	}
	var late, ahead int
	for id, m := range got {
		if m.Late != wantLate[id] {
			t.Errorf("message %s (event time %v): late %v, want %v", id, m.EventTime, m.Late, wantLate[id])
		}
		if !m.Late && m.Watermark.After(m.EventTime) {
			if ahead < 5 {
				t.Errorf("message %s: watermark %v is past its event time %v and it is not late", id, m.Watermark, m.EventTime)
			}
			ahead++
		}
		if m.Late {
			late++
		}
	}
	if late != len(wantLate) || ahead != 0 {
		t.Errorf("%d late messages (want %d), %d not late with a watermark past their event time", late, len(wantLate), ahead)
	}
	if sinkWM == 0 {
		t.Error("no sink message had a watermark: the check above proves nothing")
	}
	t.Logf("%d of %d sink messages had a watermark", sinkWM, len(got))
	for _, st := range p.Stats() {
		if !st.Watermark.Equal(watermark.Max) {
			t.Errorf("vertex %s: final watermark %v, want watermark.Max (the sources ended)", st.Name, st.Watermark)
		}
	}
}

// liveSource is a source whose replicas behave as modes says, on the
// test's clock: "live" emits 5 messages stamped clock-1ms per read, "silent"
// reads nothing, "once" emits one message at wmBase then reads nothing,
// "stuck" emits one message at wmBase then blocks until ctx ends, "ends"
// emits one message at wmBase then is exhausted (io.EOF). Every read first
// sleeps a millisecond, so a test's loop gets its turn.
type liveSource struct {
	name  string
	clock *fakeClock
	modes []string
	mu    sync.Mutex
	sent  []int
}

func newLiveSource(name string, clock *fakeClock, modes ...string) *liveSource {
	return &liveSource{name: name, clock: clock, modes: modes, sent: make([]int, len(modes))}
}

func (s *liveSource) Read(ctx context.Context, max int) ([]vertex.Message[int], error) {
	r, _ := vertex.ReplicaFrom(ctx)
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(time.Millisecond):
	}
	s.mu.Lock()
	mode, sent := s.modes[r.Index], s.sent[r.Index]
	var out []vertex.Message[int]
	switch {
	case mode == "live":
		et := s.clock.Now().Add(-time.Millisecond)
		for range min(max, 5) {
			out = append(out, vertex.Message[int]{ID: fmt.Sprintf("%s-%d-%d", s.name, r.Index, sent+len(out)), EventTime: et})
		}
	case (mode == "once" || mode == "stuck" || mode == "ends") && sent == 0:
		out = []vertex.Message[int]{{ID: fmt.Sprintf("%s-%d-0", s.name, r.Index), EventTime: wmBase}}
	case mode == "ends":
		s.mu.Unlock()
		return nil, io.EOF
	}
	s.sent[r.Index] += len(out)
	s.mu.Unlock()
	if mode == "stuck" && len(out) == 0 {
		<-ctx.Done() // hangs: no data, and no idle read either
		return nil, ctx.Err()
	}
	return out, nil
}

// running runs p in the background; stop cancels it and returns Run's error.
func running(p *pipeline.Pipeline) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- p.Run(ctx) }()
	return func() error {
		cancel()
		return <-errc
	}
}

// watermarkOf returns vertex's watermark from p.Stats.
func watermarkOf(p *pipeline.Pipeline, vertexName string) time.Time {
	for _, s := range p.Stats() {
		if s.Name == vertexName {
			return s.Watermark
		}
	}
	return time.Time{}
}

// advanceUntil moves clock by step every millisecond until cond holds, and
// reports whether it did before the deadline (a bound for a broken build,
// not a timing assertion).
func advanceUntil(clock *fakeClock, step time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		clock.Advance(step)
		time.Sleep(time.Millisecond)
	}
	return cond()
}

// idleConfig is the watermark configuration of the idle and heartbeat
// tests: everything idle is judged on clock, and heartbeats are many per
// step of it, so a live replica is never taken for dead.
func idleConfig(clock *fakeClock, sourceIdle time.Duration) pipeline.WatermarkConfig {
	return pipeline.WatermarkConfig{
		MaxDelay: 10 * time.Millisecond, IdleThreshold: sourceIdle, IdleStep: 100 * time.Millisecond, IdleIncrement: 100 * time.Millisecond,
		PartitionIdleThreshold: 500 * time.Millisecond, IdleInterval: 5 * time.Millisecond,
		HeartbeatInterval: 5 * time.Millisecond, HeartbeatTimeout: time.Hour, Throttle: time.Nanosecond, Clock: clock.Now,
	}
}

// joinWithIdleInput builds srcA -> mA and srcB -> mB, joined into one
// sink, where srcB sends one message and then reads nothing.
func joinWithIdleInput(name string, clock *fakeClock, sourceIdle time.Duration) *pipeline.Pipeline {
	p := pipeline.New(name, pipeline.Watermarks(idleConfig(clock, sourceIdle)))
	a := pipeline.Source(p, "srcA", vertex.Source[int](newLiveSource("a", clock, "live")))
	b := pipeline.Source(p, "srcB", vertex.Source[int](newLiveSource("b", clock, "once")))
	ma := pipeline.Map(p, "mA", a, ident, vertex.Partitions(2))
	mb := pipeline.Map(p, "mB", b, ident, vertex.Partitions(2))
	pipeline.Sink(p, "sink", pipeline.Join(ma, mb), vertex.Sink[int](newCounter[int]()), vertex.Partitions(2))
	return p
}

func ident(_ context.Context, v int) (int, error) { return v, nil }

// TestJoinWithIdleInputAdvances: the join's watermark follows its live
// input once the other input's source has been idle for the threshold: the
// idle source advances, its quiet buffer partitions get control messages
// and idle WMBs, down both maps to the sink.
func TestJoinWithIdleInputAdvances(t *testing.T) {
	clock := newFakeClock(wmBase)
	p := joinWithIdleInput("wm-join", clock, 500*time.Millisecond)
	stop := running(p)
	target := wmBase.Add(3 * time.Second)
	ok := advanceUntil(clock, 50*time.Millisecond, func() bool { return !watermarkOf(p, "sink").Before(target) })
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !ok {
		t.Fatalf("the join's watermark is %v, never reached %v (mA at %v, mB at %v)", watermarkOf(p, "sink"), target,
			watermarkOf(p, "mA"), watermarkOf(p, "mB"))
	}
}

// TestJoinWithoutSourceIdleStalls is the control of the test above: with
// source idleness off, the quiet input holds the join's watermark at its
// only message, however far the live input goes.
func TestJoinWithoutSourceIdleStalls(t *testing.T) {
	clock := newFakeClock(wmBase)
	p := joinWithIdleInput("wm-join-stall", clock, 0)
	stop := running(p)
	target := wmBase.Add(3 * time.Second)
	ok := advanceUntil(clock, 50*time.Millisecond, func() bool { return !watermarkOf(p, "mA").Before(target) })
	sink := watermarkOf(p, "sink")
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !ok {
		t.Fatalf("the live input never reached %v (mA at %v)", target, watermarkOf(p, "mA"))
	}
	if sink.After(wmBase) {
		t.Fatalf("the join's watermark %v passed the quiet input's only event time %v", sink, wmBase)
	}
}

// TestSourceWithSilentPartitionAdvances: one of two source replicas never
// reads anything; the source's watermark, and the sink's, still advance.
func TestSourceWithSilentPartitionAdvances(t *testing.T) {
	clock := newFakeClock(wmBase)
	p := pipeline.New("wm-silent", pipeline.Watermarks(idleConfig(clock, 500*time.Millisecond)))
	s := pipeline.Source(p, "src", vertex.Source[int](newLiveSource("s", clock, "live", "silent")), vertex.Replicas(2))
	pipeline.Sink(p, "sink", s, vertex.Sink[int](newCounter[int]()), vertex.Partitions(2), vertex.Replicas(2))
	stop := running(p)
	target := wmBase.Add(3 * time.Second)
	ok := advanceUntil(clock, 50*time.Millisecond, func() bool {
		return !watermarkOf(p, "src").Before(target) && !watermarkOf(p, "sink").Before(target)
	})
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !ok {
		t.Fatalf("watermarks src %v, sink %v: never reached %v", watermarkOf(p, "src"), watermarkOf(p, "sink"), target)
	}
}

// TestEndedSourcePartitionReleasesWatermark: one of two source replicas
// sends one message and is exhausted while the other goes on; with idle
// handling on, the ended replica used to hold every downstream watermark at
// its last event time (a sink 981 ms behind was seen). Its end publishes
// the final watermark for every partition it wrote, so the map's and the
// sink's watermarks follow the replica that goes on.
func TestEndedSourcePartitionReleasesWatermark(t *testing.T) {
	clock := newFakeClock(wmBase)
	p := pipeline.New("wm-ended", pipeline.Watermarks(idleConfig(clock, 500*time.Millisecond)))
	s := pipeline.Source(p, "src", vertex.Source[int](newLiveSource("s", clock, "live", "ends")), vertex.Replicas(2))
	m := pipeline.Map(p, "map", s, ident, vertex.Partitions(2), vertex.Replicas(2))
	pipeline.Sink(p, "sink", m, vertex.Sink[int](newCounter[int]()), vertex.Partitions(2), vertex.Replicas(2))
	stop := running(p)
	target := wmBase.Add(3 * time.Second)
	ok := advanceUntil(clock, 50*time.Millisecond, func() bool {
		return !watermarkOf(p, "map").Before(target) && !watermarkOf(p, "sink").Before(target)
	})
	src, sink := watermarkOf(p, "src"), watermarkOf(p, "sink")
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !ok {
		t.Fatalf("watermarks src %v, map %v, sink %v: never reached %v", src, watermarkOf(p, "map"), sink, target)
	}
	// The source's own watermark is its live replica's, not the final one.
	if src.Before(target) || src.Equal(watermark.Max) || sink.Equal(watermark.Max) {
		t.Fatalf("watermarks src %v, sink %v: want the live replica's, at least %v and not the final watermark", src, sink, target)
	}
}

// pausableStore drops the heartbeats of one processor once paused, as if
// that replica had died without deleting its heartbeat.
type pausableStore struct {
	watermark.Store
	key    string // the heartbeat key to drop (watermark's key layout: hb.<processor>)
	paused atomic.Bool
}

func (s *pausableStore) Put(ctx context.Context, bucket, key string, v []byte) error {
	// The pipeline names a processor's keys with its run after a '/'.
	if s.paused.Load() && (key == s.key || strings.HasPrefix(key, s.key+"/")) {
		return nil
	}
	return s.Store.Put(ctx, bucket, key, v)
}

// TestDeadReplicaIsDroppedAfterHeartbeatTimeout: a source replica that sent
// one old message and then hangs holds the sink's watermark back while it
// heartbeats, however long; once its heartbeats stop, it is dropped after
// the heartbeat timeout and the watermark follows the live replica.
func TestDeadReplicaIsDroppedAfterHeartbeatTimeout(t *testing.T) {
	clock := newFakeClock(wmBase)
	proc, err := watermark.ProcessorName("src", 1)
	if err != nil {
		t.Fatal(err)
	}
	store := &pausableStore{Store: watermark.NewMemStore(), key: "hb." + proc}
	cfg := idleConfig(clock, 0)
	cfg.HeartbeatTimeout = 20 * time.Second
	cfg.Store = store
	p := pipeline.New("wm-dead", pipeline.Watermarks(cfg))
	s := pipeline.Source(p, "src", vertex.Source[int](newLiveSource("s", clock, "live", "stuck")), vertex.Replicas(2))
	sink := newCounter[int]()
	pipeline.Sink(p, "sink", s, vertex.Sink[int](sink))
	stop := running(p)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	// Alive: two timeouts of the clock pass, in steps far shorter than the
	// timeout, and the stuck replica still holds the watermark.
	start := clock.Now()
	advanceUntil(clock, 400*time.Millisecond, func() bool { return clock.Now().Sub(start) >= 2*cfg.HeartbeatTimeout })
	if w := watermarkOf(p, "sink"); w.After(wmBase) || sink.total() < 2 {
		t.Fatalf("while the stuck replica heartbeats: sink watermark %v (want at most %v), %d messages", w, wmBase, sink.total())
	}
	// Dead: its heartbeats stop; once the timeout has passed, the live
	// replica's watermark reaches the sink.
	store.paused.Store(true)
	clock.Advance(cfg.HeartbeatTimeout + time.Second)
	target := clock.Now().Add(-time.Second)
	if !advanceUntil(clock, 50*time.Millisecond, func() bool { return !watermarkOf(p, "sink").Before(target) }) {
		t.Fatalf("sink watermark %v never reached %v after the stuck replica's heartbeats stopped (%d messages, stats %+v)", watermarkOf(p, "sink"), target, sink.total(), p.Stats())
	}
}
