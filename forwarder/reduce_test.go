package forwarder

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/memory"
	"github.com/runnel-dev/runnel/vertex"
)

type result = vertex.Message[vertex.Windowed[int64]]

// reduceOutcome is what a RunReduce of the tests left behind.
type reduceOutcome struct {
	results []result
	late    []msg // what reached the late edge (nil without one)
	in      *isb.Topic[msg]
	stats   Stats
	err     error
}

// runReduceOver runs RunReduce over msgs (one partition, keys as given;
// no watermark hook, so each message keeps the Watermark it was produced
// with), waits until every message is acked, then ends it: with a stop,
// or a failure (hard ends). withLate connects a late edge.
func runReduceOver(t *testing.T, msgs []msg, w vertex.Windowing, withLate, endWithFailure bool) reduceOutcome {
	in := newTopic(t, "in")
	out, err := memory.NewTopic[result]("out")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = out.Close() })
	if _, err := in.Producer(nil).ProduceTo(context.Background(), 0, msgs); err != nil {
		t.Fatal(err)
	}
	c, err := in.PullConsumer("reduce", isb.BatchSize(7), isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	opts, err := vertex.NewConfig(vertex.BatchSize(7), vertex.Concurrency(2))
	if err != nil {
		t.Fatal(err)
	}
	hard, failNow := context.WithCancel(context.Background())
	defer failNow()
	stop, stopNow := context.WithCancel(hard)
	defer stopNow()
	cnt := &Counters{}
	cfg := Config{Vertex: "r", Options: opts, Counters: cnt}
	spec := ReduceSpec[int, int64, int64]{Window: w, Reducer: Aggregate(vertex.Counting[int]())}
	var lateTopic *isb.Topic[msg]
	if withLate {
		lateTopic = newTopic(t, "late")
		spec.Late = []Edge[int]{{To: "late", Topic: lateTopic}}
	}
	done := make(chan error, 1)
	go func() {
		done <- RunReduce(hard, stop, cfg, Input[int]{Consumer: c, Partitions: 1}, []Edge[vertex.Windowed[int64]]{{To: "out", Topic: out}}, spec)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for cnt.Snapshot().Acked < int64(len(msgs)) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if endWithFailure {
		failNow()
	} else {
		stopNow()
	}
	o := reduceOutcome{in: in, err: <-done, stats: cnt.Snapshot()}
	o.results = readAll(t, out)
	if lateTopic != nil {
		o.late = readAll(t, lateTopic)
	}
	return o
}

// readAll reads everything topic holds, in one group.
func readAll[T any](t *testing.T, topic *isb.Topic[T]) []T {
	t.Helper()
	c, err := topic.PullConsumer("check")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []T
	for topic.Pending("check") > 0 {
		b, err := c.Pull(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b.Items...)
		if err := c.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

// thirtyInThreeWindows are 30 messages of keys a and b in three one-second
// windows, without watermarks: no window closes before the stop.
func thirtyInThreeWindows() []msg {
	msgs := values(30)
	for i := range msgs {
		msgs[i].Keys = []string{[]string{"a", "b"}[i%2]}
		msgs[i].EventTime = time.Unix(int64(i/10), 0)
	}
	return msgs
}

// A stop after a drain closes every open window and writes its results
// before RunReduce returns; a failure (hard ends) emits nothing.
func TestRunReduceEmitsOpenWindowsOnStopNotOnFailure(t *testing.T) {
	o := runReduceOver(t, thirtyInThreeWindows(), vertex.Fixed(time.Second), false, false)
	got, in, err := o.results, o.in, o.err
	if err != nil {
		t.Fatalf("RunReduce after stop: %v", err)
	}
	want := map[string]int64{}
	for w := range 3 {
		for _, k := range []string{"a", "b"} {
			want[resultID("r", vertex.Interval{Start: int64(w) * 1e9, End: int64(w+1) * 1e9}, []string{k}, 0)] = 5
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d results, want %d", len(got), len(want))
	}
	for _, r := range got {
		if want[r.ID] != r.Value.Value || !r.EventTime.Equal(r.Value.Window.End.Add(-time.Millisecond)) {
			t.Errorf("result %s = %d at %v, want %d at end - 1ms", r.ID, r.Value.Value, r.EventTime, want[r.ID])
		}
		delete(want, r.ID)
	}
	if p := in.Pending("reduce"); p != 0 {
		t.Errorf("pending %d after the stop, want 0", p)
	}

	o = runReduceOver(t, thirtyInThreeWindows(), vertex.Fixed(time.Second), false, true)
	got, err = o.results, o.err
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("RunReduce after failure: %v", err)
	}
	if len(got) != 0 {
		t.Errorf("%d results written after a failure, want none", len(got))
	}
}

// Through the forwarder, on the watermark each message carries: window
// [1s,2s) with lateness 1s takes a message at watermark 3s - 1ns and
// refuses one at 3s and above; a closed window's message is late. Late messages go
// to the late edge, in order, or are dropped and counted without one. The
// windows the watermark closed are emitted as it passes them, the rest at
// the stop, each once.
func TestRunReduceLateness(t *testing.T) {
	at := func(id string, et, wm time.Duration) msg {
		return msg{ID: id, Keys: []string{"k"}, EventTime: time.Unix(0, int64(et)), Watermark: time.Unix(0, int64(wm))}
	}
	s := time.Second
	msgs := []msg{
		at("open", s/2, 0),            // [0,1)
		at("inside", 3*s/2, 3*s-1),    // [1,2) closes at 3s: accepted one instant below; [0,1) closes
		at("closed", s/5, 3*s-1),      // [0,1) is closed: late
		at("boundary", 17*s/10, 3*s),  // [1,2) at exactly end + lateness: late; [1,2) closes
		at("after", 19*s/10, 3*s+1e6), // above it: late
		at("ahead", 5*s, 3*s+1e6),     // [5,6): open until the stop
	}
	for _, withLate := range []bool{true, false} {
		o := runReduceOver(t, msgs, vertex.Fixed(s).WithAllowedLateness(s), withLate, false)
		if o.err != nil {
			t.Fatal(o.err)
		}
		got := map[string]int64{}
		for _, r := range o.results {
			got[r.ID] = r.Value.Value
		}
		win := func(from, to time.Duration) string {
			return resultID("r", vertex.Interval{Start: int64(from), End: int64(to)}, []string{"k"}, 0)
		}
		want := map[string]int64{win(0, s): 1, win(s, 2*s): 1, win(5*s, 6*s): 1}
		if !maps.Equal(got, want) || len(o.results) != len(want) {
			t.Errorf("late edge %v: results %v, want %v", withLate, got, want)
		}
		var lateIDs []string
		for _, m := range o.late {
			lateIDs = append(lateIDs, m.ID)
		}
		switch {
		case withLate && !slices.Equal(lateIDs, []string{"closed", "boundary", "after"}):
			t.Errorf("late stream %v, want closed, boundary, after", lateIDs)
		case o.stats.Late != 3 || (withLate && o.stats.Dropped != 0) || (!withLate && o.stats.Dropped != 3):
			t.Errorf("late edge %v: Late %d Dropped %d", withLate, o.stats.Late, o.stats.Dropped)
		}
	}
}

// The published watermark is min(reader watermark - lateness, oldest open
// window end) - 1ms: a message inside the lateness may still open a window
// ending just after watermark - lateness, and its result must not be late
// downstream.
func TestReduceWatermark(t *testing.T) {
	r := newReader[int](nil, 1, 1, 1, &Counters{}, nil, nil)
	red := &reduceReplica[int, int64, int64]{lateness: int64(10 * time.Second), r: r,
		shards: []*reduceShard[int, int64, int64]{{}, {}}}
	for _, sh := range red.shards {
		sh.oldest.Store(math.MaxInt64)
	}
	if wm := red.watermark(); !wm.IsZero() {
		t.Fatalf("watermark %v before the reader has one, want zero", wm)
	}
	r.raiseHead(time.Unix(100, 0))
	if wm, want := red.watermark(), time.Unix(90, 0).Add(-time.Millisecond); !wm.Equal(want) {
		t.Errorf("no open window: %v, want watermark - lateness - 1ms = %v", wm, want)
	}
	red.shards[1].oldest.Store(time.Unix(50, 0).UnixNano())
	if wm, want := red.watermark(), time.Unix(50, 0).Add(-time.Millisecond); !wm.Equal(want) {
		t.Errorf("a window open until 50s: %v, want its end - 1ms = %v", wm, want)
	}
}
