package forwarder

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/watermark"
)

// A partition ends when each of its writers' ends is read, a repeated end
// counts once, and the weakest end wins: a partition, and the input, end
// Final only when every end was Final.
func TestInputEnds(t *testing.T) {
	e := NewInputEnds([]int{0, 2}, 2)
	step := func(part int, proc string, kind EndKind, wantEnded bool, wantKind EndKind) {
		t.Helper()
		ended, k := e.Observe(part, proc, kind)
		if ended != wantEnded || k != wantKind {
			t.Fatalf("Observe(%d, %s, %v) = %v, %v; want %v, %v", part, proc, kind, ended, k, wantEnded, wantKind)
		}
	}
	step(0, "a/0", Final, false, 0)
	step(0, "a/0", Final, false, 0) // redelivered: counts once
	step(1, "a/1", Final, false, 0) // a partition not read
	step(0, "a/1", Final, true, Final)
	step(0, "late/0", Final, false, 0) // after the end: nothing
	if e.Done() || e.Kind() != 0 {
		t.Fatalf("Done %v, Kind %v with partition 2 open; want false, not ended", e.Done(), e.Kind())
	}
	step(2, "a/1", Stopped, false, 0)
	step(2, "a/0", Final, true, Stopped)
	if !e.Done() || e.Kind() != Stopped {
		t.Fatalf("Done %v, Kind %v; want true, stopped", e.Done(), e.Kind())
	}
	never := NewInputEnds([]int{0}, 0)
	if ended, _ := never.Observe(0, "a/0", Final); ended || never.Done() {
		t.Fatal("an input without writers ended")
	}
}

// endRecorder is the watermark hooks of one processor: it records the
// final WMBs published, the partitions ended and the source partition
// ended.
type endRecorder struct {
	mu        sync.Mutex
	published []string // "to/partition" of each PublishEnd
	ended     []int    // partitions of each EndPartition
	exhausted []int    // source partitions of each End
}

func (r *endRecorder) Publish(string, int, int64, time.Time) {}
func (r *endRecorder) PublishEnd(to string, partition int, _ int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.published = append(r.published, fmt.Sprintf("%s/%d", to, partition))
}
func (r *endRecorder) Fetch(int, int64) time.Time { return time.Unix(1, 0) }
func (r *endRecorder) EndPartition(p int) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = append(r.ended, p)
	return time.Unix(2, 0)
}
func (r *endRecorder) Observe(int, time.Time) time.Time { return time.Unix(1, 0) }
func (r *endRecorder) End(p int) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exhausted = append(r.exhausted, p)
	return watermark.Max
}

func (r *endRecorder) hooks() Hooks { return Hooks{Publisher: r, Fetcher: r, Source: r} }

// idSink records the IDs it receives.
type idSink struct {
	mu  sync.Mutex
	ids map[string]int
}

func (s *idSink) Write(_ context.Context, msgs []msg) ([]vertex.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		s.ids[m.ID]++
	}
	return nil, nil
}

// TestChainEndsThroughBuffersAlone runs source (2 replicas) -> map (2
// replicas, 3 partitions) -> sink (2 partitions), each processor on its own
// goroutine with contexts of its own that nothing cancels: only the buffers
// connect them, as when they run in different processes. When the source is
// exhausted, every processor ends by itself, Final, with every message
// delivered once, every buffer committed, every final WMB published and
// every input partition ended. When the source is stopped instead (soft
// cancelled), everything drains and ends the same way, Stopped: no final
// WMB, no partition's watermark ended.
func TestChainEndsThroughBuffersAlone(t *testing.T) {
	for _, exhaust := range []bool{true, false} {
		t.Run(map[bool]string{true: "exhausted", false: "stopped"}[exhaust], func(t *testing.T) {
			testChainEnds(t, exhaust)
		})
	}
}

func testChainEnds(t *testing.T, exhaust bool) {
	const n = 2000
	mid, last := newTopic(t, "mid", isb.Partitions(3)), newTopic(t, "last", isb.Partitions(2))
	var src vertex.Source[int]
	soft, stopSource := context.WithCancel(context.Background())
	defer stopSource()
	if exhaust {
		src = vertex.FromSlice(slices.Collect(func(yield func(int) bool) {
			for i := range n {
				if !yield(i) {
					return
				}
			}
		}))
	} else {
		src = vertex.Generator(func(i int64) int { return int(i) })
	}
	// A bound for a broken build only: every processor must end long before.
	bound, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts, err := NewOptions(vertex.BatchSize(16), vertex.Concurrency(2))
	if err != nil {
		t.Fatal(err)
	}
	mapIn, err := mid.PullConsumers("map", 2, isb.BatchSize(16), isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	sinkIn, err := last.PullConsumers("sink", 1, isb.BatchSize(16), isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, c := range append(mapIn, sinkIn...) {
			_ = c.Close()
		}
	}()
	srcRec, mapRec, sinkRec := []*endRecorder{{}, {}}, []*endRecorder{{}, {}}, &endRecorder{}
	srcCounters := []*Counters{{}, {}}
	sink := &idSink{ids: map[string]int{}}
	errs := make(chan error, 5)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			cfg := Config{Vertex: "src", Replica: r, Options: opts, Counters: srcCounters[r], Hooks: srcRec[r].hooks()}
			errs <- RunSource(bound, soft, cfg, src, []Edge[int]{{To: "map", Topic: mid}})
		})
		wg.Go(func() {
			cfg := Config{Vertex: "map", Replica: r, Options: opts, Counters: &Counters{}, Hooks: mapRec[r].hooks()}
			in := Input[int]{Consumer: mapIn[r], Partitions: 3, Writers: 2}
			errs <- RunMap(bound, bound, cfg, in, []Edge[int]{{To: "sink", Topic: last}}, FromValueFunc(func(_ context.Context, v int) (int, error) { return v, nil }))
		})
	}
	wg.Go(func() {
		cfg := Config{Vertex: "sink", Options: opts, Counters: &Counters{}, Hooks: sinkRec.hooks()}
		errs <- RunSink(bound, bound, cfg, Input[int]{Consumer: sinkIn[0], Partitions: 2, Writers: 2}, vertex.Sink[int](sink), nil)
	})
	if !exhaust {
		for srcCounters[0].Snapshot().Acked+srcCounters[1].Snapshot().Acked < n && bound.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		stopSource()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a processor failed: %v", err)
		}
	}
	if bound.Err() != nil {
		t.Fatal("the processors did not end by themselves")
	}

	written := int(srcCounters[0].Snapshot().Acked + srcCounters[1].Snapshot().Acked)
	if exhaust && written != n || !exhaust && written < n {
		t.Fatalf("the source wrote %d messages, want %d", written, n)
	}
	if len(sink.ids) != written {
		t.Errorf("the sink got %d distinct ids, want %d", len(sink.ids), written)
	}
	for i := range written {
		if c := sink.ids[strconv.Itoa(i)]; c != 1 {
			t.Fatalf("id %d delivered %d times, want 1", i, c)
		}
	}
	if p := mid.Pending("map"); p != 0 {
		t.Errorf("map's buffer: %d pending, want 0 (ends committed too)", p)
	}
	if p := last.Pending("sink"); p != 0 {
		t.Errorf("sink's buffer: %d pending, want 0", p)
	}

	check := func(who string, got, want []string) {
		t.Helper()
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", who, got, want)
		}
	}
	if !exhaust {
		for _, rec := range append(append(srcRec, mapRec...), sinkRec) {
			if len(rec.published)+len(rec.ended)+len(rec.exhausted) != 0 {
				t.Errorf("a stopped chain claimed an end: published %v, partitions ended %v, source ended %v",
					rec.published, rec.ended, rec.exhausted)
			}
		}
		return
	}
	var mapEnded []string
	for r := range 2 {
		check(fmt.Sprintf("source %d final WMBs", r), srcRec[r].published, []string{"map/0", "map/1", "map/2"})
		check(fmt.Sprintf("source %d partitions exhausted", r), strs(srcRec[r].exhausted), []string{strconv.Itoa(r)})
		check(fmt.Sprintf("map %d final WMBs", r), mapRec[r].published, []string{"sink/0", "sink/1"})
		check(fmt.Sprintf("map %d partitions ended", r), strs(mapRec[r].ended), strs(mapIn[r].Assigned()))
		mapEnded = append(mapEnded, strs(mapRec[r].ended)...)
	}
	check("map partitions ended", mapEnded, []string{"0", "1", "2"})
	check("sink partitions ended", strs(sinkRec.ended), []string{"0", "1"})
}

func strs(ints []int) []string {
	out := make([]string, len(ints))
	for i, v := range ints {
		out[i] = strconv.Itoa(v)
	}
	return out
}
