package forwarder

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/memory"
	"github.com/runnel-dev/runnel/vertex"
)

type result = vertex.Message[vertex.Windowed[int64]]

// reduceRun runs RunReduce over 30 keyed messages in three one-second
// windows (no watermarks, so no window closes before the stop), waits
// until every message is acked, then ends it with end (stop or hard).
// It returns what reached the output topic, the input topic and
// RunReduce's error.
func reduceRun(t *testing.T, endWithFailure bool) ([]result, *isb.Topic[msg], error) {
	in := newTopic(t, "in")
	out, err := memory.NewTopic[result]("out")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = out.Close() })
	msgs := values(30)
	for i := range msgs {
		msgs[i].Keys = []string{[]string{"a", "b"}[i%2]}
		msgs[i].EventTime = time.Unix(int64(i/10), 0)
	}
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
	spec := ReduceSpec[int, int64, int64]{Window: vertex.Fixed(time.Second), Reducer: Aggregate(vertex.Counting[int]())}
	done := make(chan error, 1)
	go func() {
		done <- RunReduce(hard, stop, cfg, Input[int]{Consumer: c, Partitions: 1}, []Edge[vertex.Windowed[int64]]{{To: "out", Topic: out}}, spec)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for cnt.Snapshot().Acked < 30 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if endWithFailure {
		failNow()
	} else {
		stopNow()
	}
	err = <-done
	oc, cerr := out.PullConsumer("check")
	if cerr != nil {
		t.Fatal(cerr)
	}
	defer oc.Close()
	var got []result
	for out.Pending("check") > 0 {
		b, err := oc.Pull(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b.Items...)
		if err := oc.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	return got, in, err
}

// A stop after a drain closes every open window and writes its results
// before RunReduce returns; a failure (hard ends) emits nothing.
func TestRunReduceEmitsOpenWindowsOnStopNotOnFailure(t *testing.T) {
	got, in, err := reduceRun(t, false)
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

	got, _, err = reduceRun(t, true)
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("RunReduce after failure: %v", err)
	}
	if len(got) != 0 {
		t.Errorf("%d results written after a failure, want none", len(got))
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
