package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/watermark"
)

// tagByValue tags 0..99: every tenth is dropped by its tag, the fives
// between them get a tag no edge takes, the rest "even" or "odd".
func tagByValue(_ context.Context, m vertex.Message[int]) ([]vertex.Message[int], error) {
	out := vertex.Derive(m, m.Value)
	switch v := m.Value; {
	case v%10 == 0:
		out.Tags = []string{vertex.DropTag}
	case v%10 == 5:
		out.Tags = []string{"nowhere"}
	case v%2 == 0:
		out.Tags = []string{"even"}
	default:
		out.Tags = []string{"odd"}
	}
	return []vertex.Message[int]{out}, nil
}

// TestStatusAfterRun: after a run of 100 messages the status has every
// vertex's exact counts, drops by reason, the retried and dropped message
// of a failing sink with its error, every edge with its counts and final
// watermark, and the processing time of every vertex.
func TestStatusAfterRun(t *testing.T) {
	p := pipeline.New("status")
	if st := p.Status(); st.State != "new" || st.Run != "" {
		t.Fatalf("before Run: state %q, run %q", st.State, st.Run)
	}
	src := pipeline.Source(p, "gen", vertex.FromSlice(intsUpTo(100)))
	tagged := pipeline.FlatMap(p, "tag", src, tagByValue, vertex.Partitions(2), vertex.Replicas(2))
	pipeline.Sink(p, "evens", tagged.Tagged("even"), vertex.Blackhole[int]())
	refuse := errors.New("seven is refused")
	pipeline.Sink(p, "odds", tagged.Tagged("odd"), vertex.Func(func(_ context.Context, msgs []vertex.Message[int]) error {
		for _, m := range msgs {
			if m.Value == 7 {
				return refuse
			}
		}
		return nil
	}), vertex.BatchSize(1), vertex.Retry(vertex.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Millisecond, OnExhausted: vertex.DropMessage}))
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := p.Status()
	if st.State != "stopped" || st.Run == "" || st.Storage != "memory" || st.Started.IsZero() || st.Error != "" {
		t.Fatalf("after Run: state %q run %q storage %q started %v error %q", st.State, st.Run, st.Storage, st.Started, st.Error)
	}
	want := map[string]pipeline.Counters{
		"gen":   {Read: 100, Written: 100, Acked: 100},
		"tag":   {Read: 100, Written: 80, Acked: 100, Dropped: 20, Drops: pipeline.Drops{Tagged: 10, NoEdge: 10}},
		"evens": {Read: 40, Written: 40, Acked: 40},
		"odds":  {Read: 40, Written: 39, Acked: 40, Dropped: 1, Drops: pipeline.Drops{Retries: 1}, Retried: 2},
	}
	for _, v := range st.Vertices {
		c := v.Counters
		c.PeakInFlight = 0
		if c != want[v.Name] {
			t.Errorf("%s: %+v, want %+v", v.Name, c, want[v.Name])
		}
		if v.Latency.Count == 0 || len(v.Latency.Counts) != len(v.Latency.Bounds)+1 {
			t.Errorf("%s: no processing time observed: %+v", v.Name, v.Latency)
		}
		if !v.Watermark.Equal(watermark.Max) {
			t.Errorf("%s: watermark %v after the end, want the maximum", v.Name, v.Watermark)
		}
		parts := map[string]int{"gen": 0, "tag": 2, "evens": 1, "odds": 1}[v.Name]
		if v.Pending != 0 || len(v.Partitions) != parts {
			t.Errorf("%s: pending %d, partitions %+v", v.Name, v.Pending, v.Partitions)
		}
	}
	odds := st.Vertices[3]
	if wantErr := "vertex: retries exhausted: " + refuse.Error(); odds.LastError == nil || odds.LastError.Message != wantErr || odds.LastError.Replica != 0 {
		t.Errorf("odds: last error %+v, want %q", odds.LastError, wantErr)
	}
	if st.Vertices[1].LastError != nil {
		t.Errorf("tag: last error %+v, want none", st.Vertices[1].LastError)
	}
	wantEdges := []pipeline.EdgeStats{
		{From: "gen", To: "tag", Written: 100},
		{From: "tag", To: "evens", Condition: "any(even)", Written: 40},
		{From: "tag", To: "odds", Condition: "any(odd)", Written: 40},
	}
	if len(st.Edges) != len(wantEdges) {
		t.Fatalf("edges %+v", st.Edges)
	}
	for i, e := range st.Edges {
		if !e.Watermark.Equal(watermark.Max) {
			t.Errorf("edge %s->%s: watermark %v, want the maximum", e.From, e.To, e.Watermark)
		}
		if e.Rate.M1 <= 0 {
			t.Errorf("edge %s->%s: rate %+v right after the run, want above 0", e.From, e.To, e.Rate)
		}
		e.Watermark, e.Rate = time.Time{}, pipeline.Rates{}
		if e != wantEdges[i] {
			t.Errorf("edge %d: %+v, want %+v", i, e, wantEdges[i])
		}
	}
	// The schema's names.
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Vertices []map[string]any `json:"vertices"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	drops := doc.Vertices[1]["drops"].(map[string]any)
	if doc.Vertices[1]["read"] != 100.0 || drops["drop_tag"] != 10.0 || drops["no_edge"] != 10.0 {
		t.Errorf("JSON of tag: %v", doc.Vertices[1])
	}
}

func intsUpTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestStatusShowsFullBuffer: a sink that does not return fills its
// buffer; the vertex and the edge into it are full, with the capacity
// used and the backlog per partition, until it goes on.
func TestStatusShowsFullBuffer(t *testing.T) {
	p := pipeline.New("full")
	src := pipeline.Source(p, "gen", vertex.Generator(func(i int64) int64 { return i }).WithCount(1000))
	release := make(chan struct{})
	pipeline.Sink(p, "slow", src, vertex.Func(func(ctx context.Context, _ []vertex.Message[int64]) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}), vertex.BufferCapacity(100), vertex.BatchSize(10), vertex.MaxInFlight(10))
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	deadline := time.Now().Add(30 * time.Second)
	var st pipeline.Status
	for st = p.Status(); !(len(st.Edges) == 1 && st.Edges[0].Full); st = p.Status() {
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("the buffer never filled: %+v", st.Vertices)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	slow := st.Vertices[1]
	if st.State != "running" || !slow.Full || slow.Capacity != 100 || slow.Used < 100 || slow.Pending < 100 ||
		len(slow.Partitions) != 1 || slow.Partitions[0].Pending != slow.Pending || slow.Partitions[0].Replica != 0 {
		t.Fatalf("full buffer shown as state %q, %+v", st.State, slow)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st = p.Status()
	if st.Vertices[1].Full || st.Edges[0].Full || st.Vertices[1].Read != 1000 || st.Vertices[1].Partitions[0].Replica != -1 {
		t.Fatalf("after the run: %+v, edge %+v", st.Vertices[1], st.Edges[0])
	}
}

// TestStatusCountsDiscardsAndWindows: an edge that discards when full
// counts what it discarded, as the writer's buffer_full drops, and what
// it wrote is what the sink read; a reduce shows its open windows while
// they are open, and a message for a closed window as late and dropped.
func TestStatusCountsDiscardsAndWindows(t *testing.T) {
	p := pipeline.New("discards")
	src := pipeline.Source(p, "gen", vertex.Generator(func(i int64) int64 { return i }).WithCount(2000))
	release := make(chan struct{})
	pipeline.Sink(p, "slow", src.DiscardWhenFull(), vertex.Func(func(ctx context.Context, _ []vertex.Message[int64]) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}), vertex.BufferCapacity(50), vertex.BatchSize(10), vertex.MaxInFlight(10))
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	waitStatus(t, p, "the source wrote everything", func(st pipeline.Status) bool { return st.Vertices[0].Acked == 2000 })
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st := p.Status()
	gen, slow, e := st.Vertices[0], st.Vertices[1], st.Edges[0]
	if !e.Discard || e.Discarded == 0 || e.Discarded != gen.Drops.Full || gen.Dropped != gen.Drops.Full ||
		e.Written != slow.Read || e.Written+e.Discarded != 2000 || gen.Written != e.Written {
		t.Fatalf("edge %+v; gen %+v; slow read %d", e, gen.Counters, slow.Read)
	}

	// Windows: 3 keys in one minute-window, then a message a minute
	// later closes it, then one for the closed window is late.
	ch := make(chan vertex.Message[int], 1)
	p = pipeline.New("windows")
	in := pipeline.Source[int](p, "in", messagesFrom(ch))
	counts, _ := pipeline.Reduce(p, "count", in, vertex.Fixed(time.Minute), vertex.Counting[int]())
	got := make(chan vertex.Message[vertex.Windowed[int64]], 10)
	pipeline.Sink(p, "out", counts, vertex.ToChannel(got))
	done = make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, k := range []string{"a", "b", "c", "a"} {
		ch <- vertex.Message[int]{ID: fmt.Sprint(i), EventTime: t0.Add(time.Duration(i) * time.Second), Keys: []string{k}, Value: i}
	}
	waitStatus(t, p, "3 windows open", func(st pipeline.Status) bool { return st.Vertices[1].OpenWindows == 3 && st.Vertices[1].Acked == 4 })
	ch <- vertex.Message[int]{ID: "later", EventTime: t0.Add(2 * time.Minute), Keys: []string{"a"}}
	waitStatus(t, p, "the first window closed", func(st pipeline.Status) bool {
		return st.Vertices[1].Results == 3 && st.Vertices[1].OpenWindows == 1
	})
	ch <- vertex.Message[int]{ID: "late", EventTime: t0.Add(5 * time.Second), Keys: []string{"b"}}
	waitStatus(t, p, "the late message counted", func(st pipeline.Status) bool { return st.Vertices[1].Acked == 6 })
	close(ch)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c := p.Status().Vertices[1]
	if c.Late != 1 || c.Drops.Late != 1 || c.Dropped != 1 || c.Results != 4 || c.OpenWindows != 0 {
		t.Fatalf("reduce after the run: %+v", c.Counters)
	}
	if r := c.PerReplica[0]; r.OpenWindows != 0 || r.Results != 4 {
		t.Fatalf("replica 0: %+v", r)
	}
}

// messagesFrom is a source of the messages received from ch, one per
// Read, with their event times and keys; it ends when ch is closed.
type messagesFrom chan vertex.Message[int]

func (s messagesFrom) Read(ctx context.Context, _ int) ([]vertex.Message[int], error) {
	select {
	case m, ok := <-s:
		if !ok {
			return nil, io.EOF
		}
		return []vertex.Message[int]{m}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// waitStatus polls p.Status, bounded, until cond holds.
func waitStatus(t *testing.T, p *pipeline.Pipeline, what string, cond func(pipeline.Status) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for st := p.Status(); !cond(st); st = p.Status() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s: %+v", what, st.Vertices)
		}
		time.Sleep(time.Millisecond)
	}
}
