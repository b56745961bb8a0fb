package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
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
