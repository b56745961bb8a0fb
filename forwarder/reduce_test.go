package forwarder

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/window"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/memory"
	"github.com/runnel-dev/runnel/vertex"
)

type result = vertex.Message[vertex.Windowed[int64]]

// reduceOutcome is what a RunReduce of the tests left behind.
type reduceOutcome struct {
	results []result
	ends    []result // the control messages of the output, in order
	late    []msg    // what reached the late edge (nil without one)
	// lateEnds counts the control messages of the late edge.
	lateEnds int
	in       *isb.Topic[msg]
	stats    Stats
	err      error
}

// runReduceOver runs RunReduce over msgs (one partition, keys as given;
// no watermark hook, so each message keeps the Watermark it was produced
// with), then ends it: by an end of stream of kind end from the input's one
// writer after the messages (the replica ends by itself), or, with end 0,
// by a failure (hard ends) once every message is acked. withLate connects
// a late edge. Control messages the replica wrote are split out of the
// results and the late stream.
func runReduceOver(t *testing.T, msgs []msg, w vertex.Windowing, withLate bool, end EndKind) reduceOutcome {
	return runReduceSized(t, msgs, w, withLate, end, 7, 2)
}

// runReduceSized is runReduceOver with the reduce's read batch size and
// concurrency (shards) as given.
func runReduceSized(t *testing.T, msgs []msg, w vertex.Windowing, withLate bool, end EndKind, batch, shards int) reduceOutcome {
	t.Helper()
	in := newTopic(t, "in")
	out, err := memory.NewTopic[result]("out")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = out.Close() })
	if _, err := in.Producer(nil).ProduceTo(context.Background(), 0, msgs); err != nil {
		t.Fatal(err)
	}
	if end != 0 {
		upstream := NewWriter([]Edge[int]{{To: "r", Topic: in}}, &Counters{}, nil, nil)
		if err := upstream.WriteEnd(context.Background(), "src/0", end); err != nil {
			t.Fatal(err)
		}
	}
	c, err := in.PullConsumer("reduce", isb.BatchSize(batch), isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	opts, err := NewOptions(vertex.BatchSize(batch), vertex.Concurrency(shards))
	if err != nil {
		t.Fatal(err)
	}
	hard, failNow := context.WithCancel(context.Background())
	defer failNow()
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
		done <- RunReduce(hard, hard, cfg, Input[int]{Consumer: c, Partitions: 1, Writers: 1}, []Edge[vertex.Windowed[int64]]{{To: "out", Topic: out}}, spec)
	}()
	if end == 0 {
		deadline := time.Now().Add(10 * time.Second)
		for cnt.Snapshot().Acked < int64(len(msgs)) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		failNow()
	}
	o := reduceOutcome{in: in, err: <-done, stats: cnt.Snapshot()}
	o.results, o.ends = splitEnds(readAll(t, out))
	if lateTopic != nil {
		var lateEnds []msg
		o.late, lateEnds = splitEnds(readAll(t, lateTopic))
		o.lateEnds = len(lateEnds)
	}
	return o
}

// splitEnds splits the control messages out of msgs, keeping the order of
// both.
func splitEnds[T any](msgs []vertex.Message[T]) (data, control []vertex.Message[T]) {
	for _, m := range msgs {
		if m.HasTag(ControlTag) {
			control = append(control, m)
		} else {
			data = append(data, m)
		}
	}
	return data, control
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
// windows, without watermarks: no window closes before the input ends.
func thirtyInThreeWindows() []msg {
	msgs := values(30)
	for i := range msgs {
		msgs[i].Keys = []string{[]string{"a", "b"}[i%2]}
		msgs[i].EventTime = time.Unix(int64(i/10), 0)
	}
	return msgs
}

// The end of stream ends a reduce replica by itself. A Final end is the
// maximum watermark: every window closes and its result is written, then
// the replica's own end follows them. A Stopped end (a cancelled pipeline,
// memory storage) emits the open windows as they are, since nothing acked
// may be lost, and ends Stopped. A failure (hard ends) emits nothing and
// writes no end.
func TestRunReduceEndOfStream(t *testing.T) {
	want := map[string]int64{}
	for w := range 3 {
		for _, k := range []string{"a", "b"} {
			want[resultID("r", window.Interval{Start: int64(w) * 1e9, End: int64(w+1) * 1e9}, []string{k}, 0)] = 5
		}
	}
	for _, end := range []EndKind{Final, Stopped} {
		o := runReduceOver(t, thirtyInThreeWindows(), vertex.Fixed(time.Second), true, end)
		if o.err != nil {
			t.Fatalf("%v end: RunReduce: %v", end, o.err)
		}
		got := map[string]int64{}
		for _, r := range o.results {
			if !r.EventTime.Equal(r.Value.Window.End.Add(-time.Millisecond)) {
				t.Errorf("%v end: result %s at %v, want its window's end - 1ms", end, r.ID, r.EventTime)
			}
			got[r.ID] = r.Value.Value
		}
		if len(o.results) != len(want) || !maps.Equal(got, want) {
			t.Errorf("%v end: results %v (%d), want %v", end, got, len(o.results), want)
		}
		if len(o.ends) != 1 || o.ends[0].ID != "r/0" {
			t.Fatalf("%v end: output control messages %v, want the end of r/0", end, o.ends)
		}
		if _, kind, ok := EndOf(&o.ends[0]); !ok || kind != end {
			t.Errorf("%v end: the replica ended its output %v, want %v", end, kind, end)
		}
		if o.lateEnds != 1 {
			t.Errorf("%v end: %d ends on the late edge, want 1", end, o.lateEnds)
		}
		if p := o.in.Pending("reduce"); p != 0 {
			t.Errorf("%v end: pending %d after the end, want 0", end, p)
		}
	}

	o := runReduceOver(t, thirtyInThreeWindows(), vertex.Fixed(time.Second), false, 0)
	if o.err != nil && !errors.Is(o.err, context.Canceled) {
		t.Fatalf("RunReduce after failure: %v", o.err)
	}
	if len(o.results) != 0 || len(o.ends) != 0 {
		t.Errorf("%d results and %d ends written after a failure, want none", len(o.results), len(o.ends))
	}
}

// Through the forwarder, on the watermark each message carries: window
// [1s,2s) with lateness 1s takes a message at watermark 3s - 1ns and
// refuses one at 3s and above; a closed window's message is late. Late messages go
// to the late edge, in order, or are dropped and counted without one. The
// windows the watermark closed are emitted as it passes them, the rest at
// the end of stream, each once.
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
		at("ahead", 5*s, 3*s+1e6),     // [5,6): open until the end
	}
	for _, withLate := range []bool{true, false} {
		o := runReduceOver(t, msgs, vertex.Fixed(s).WithAllowedLateness(s), withLate, Final)
		if o.err != nil {
			t.Fatal(o.err)
		}
		got := map[string]int64{}
		for _, r := range o.results {
			got[r.ID] = r.Value.Value
		}
		win := func(from, to time.Duration) string {
			return resultID("r", window.Interval{Start: int64(from), End: int64(to)}, []string{"k"}, 0)
		}
		want := map[string]int64{win(0, s): 1, win(s, 2*s): 1, win(5*s, 6*s): 1}
		if !maps.Equal(got, want) || len(o.results) != len(want) {
			t.Errorf("late edge %v: results %v, want %v", withLate, got, want)
		}
		var lateIDs []string
		for _, m := range o.late {
			lateIDs = append(lateIDs, m.ID)
		}
		if withLate && len(o.late) > 0 {
			// What made "closed" late: read at 3s-1ns, its window [0,1s)
			// closed at 1s + the lateness.
			stamp := func(d time.Duration) string { return time.Unix(0, int64(d)).UTC().Format(time.RFC3339Nano) }
			want := map[string]string{vertex.LateWatermarkHeader: stamp(3*s - 1), vertex.LateWindowEndHeader: stamp(s), vertex.LateClosedAtHeader: stamp(2 * s)}
			if got := o.late[0].Headers; !maps.Equal(got, want) {
				t.Errorf("headers of the late %s: %v, want %v", o.late[0].ID, got, want)
			}
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
	r := newReader[int](nil, 1, 0, 1, 1, &Counters{}, nil)
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
