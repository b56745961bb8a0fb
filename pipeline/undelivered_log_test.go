package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/runnel-dev/runnel/forwarder"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// What a vertex logs about messages it does not deliver as written (a
// buffer full under DiscardWhenFull, late data without a late stream, a
// fallback sink), or about a user-function call it retries, names the
// reason (a retried call: its error) and the vertex, and is rate-limited:
// fewer lines than events, each with how many events it stands for
// ("messages"; a failure line the failures it did not log since the
// previous one, "suppressed"). Drop and fallback lines add up to the count
// Stats gives (what the limit held back is logged at the end of the run);
// failure lines to at most the retries.
func TestUndeliveredAndRetriedAreLogged(t *testing.T) {
	tests := []struct {
		name string
		// build adds the vertices to p; during, if not nil, runs while p
		// runs.
		build  func(p *pipeline.Pipeline) (during func(t *testing.T))
		msg    string
		reason string // "" for a failure line, which has the error instead
		vertex string
		count  string // the field counting the events a line stands for
		events func(s pipeline.VertexStats) int64
		least  int64 // events the run makes at least (exactly, with exact)
		exact  bool
	}{
		{
			name: "buffer full",
			// The sink holds its first batch until the generator wrote
			// everything; its buffer of 50 discards the rest.
			build: func(p *pipeline.Pipeline) func(*testing.T) {
				src := pipeline.Source(p, "gen", vertex.Generator(func(i int64) int64 { return i }).WithCount(2000))
				release := make(chan struct{})
				pipeline.Sink(p, "slow", src.DiscardWhenFull(), vertex.Func(func(ctx context.Context, _ []vertex.Message[int64]) error {
					select {
					case <-release:
					case <-ctx.Done():
					}
					return nil
				}), vertex.BufferCapacity(50), vertex.BatchSize(10), vertex.MaxInFlight(10))
				return func(t *testing.T) {
					waitStatus(t, p, "the generator wrote everything", func(st pipeline.Status) bool { return st.Vertices[0].Acked == 2000 })
					close(release)
				}
			},
			msg: "messages dropped", reason: forwarder.DropFull, vertex: "gen", count: "messages",
			events: func(s pipeline.VertexStats) int64 { return s.Drops.Full }, least: 1000,
		},
		{
			name: "late",
			// Three messages in a minute-window, one a minute later: once
			// the reduce closed the window, twenty more for it are late,
			// and dropped (no late stream).
			build: func(p *pipeline.Pipeline) func(*testing.T) {
				ch := make(chan vertex.Message[int], 1)
				in := pipeline.Source[int](p, "in", messagesFrom(ch))
				counts, _ := pipeline.Reduce(p, "count", in, vertex.Fixed(time.Minute), vertex.Counting[int]())
				pipeline.Sink(p, "out", counts, vertex.Blackhole[vertex.Windowed[int64]]())
				return func(t *testing.T) {
					t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
					for i := range 3 {
						ch <- vertex.Message[int]{ID: fmt.Sprint(i), EventTime: t0.Add(time.Duration(i) * time.Second), Value: i}
					}
					ch <- vertex.Message[int]{ID: "later", EventTime: t0.Add(2 * time.Minute)}
					waitStatus(t, p, "the first window closed", func(st pipeline.Status) bool { return st.Vertices[1].Results == 1 })
					for i := range 20 {
						ch <- vertex.Message[int]{ID: fmt.Sprint("late-", i), EventTime: t0.Add(5 * time.Second)}
					}
					close(ch)
				}
			},
			msg: "messages dropped", reason: forwarder.DropLate, vertex: "count", count: "messages",
			events: func(s pipeline.VertexStats) int64 { return s.Drops.Late }, least: 20, exact: true,
		},
		{
			name: "fallback",
			// The sink sends every odd number to its fallback.
			build: func(p *pipeline.Pipeline) func(*testing.T) {
				src := pipeline.Source(p, "nums", vertex.FromSlice(intsUpTo(400)))
				odd := vertex.SinkFunc[int](func(_ context.Context, msgs []vertex.Message[int]) ([]vertex.Result, error) {
					res := make([]vertex.Result, len(msgs))
					for i, m := range msgs {
						if m.Value%2 == 1 {
							res[i] = vertex.ResultFallback
						}
					}
					return res, nil
				})
				pipeline.SinkWithFallback(p, "out", src, odd, vertex.Sink[int](vertex.Blackhole[int]()), vertex.Replicas(2))
				return nil
			},
			msg: "messages sent to the fallback sink", reason: forwarder.ToFallbackSink, vertex: "out", count: "messages",
			events: func(s pipeline.VertexStats) int64 { return s.Fallback }, least: 200, exact: true,
		},
		{
			name: "retried map call",
			// Every message's first call fails, its retry succeeds.
			build: func(p *pipeline.Pipeline) func(*testing.T) {
				src := pipeline.Source(p, "nums", vertex.FromSlice(intsUpTo(200)))
				var tried sync.Map
				work := pipeline.Map(p, "work", src, func(_ context.Context, v int) (int, error) {
					if _, again := tried.LoadOrStore(v, true); !again {
						return 0, errors.New("first call fails")
					}
					return v, nil
				}, vertex.Retry(vertex.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Microsecond}))
				pipeline.Sink(p, "out", work, vertex.Blackhole[int]())
				return nil
			},
			msg: "map call failed, retrying", vertex: "work", count: "suppressed",
			events: func(s pipeline.VertexStats) int64 { return s.Retried }, least: 200, exact: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, obs := observer.New(zap.InfoLevel)
			p := pipeline.New("logs", pipeline.WithLogger(zap.New(core)))
			during := tt.build(p)
			done := make(chan error, 1)
			go func() { done <- p.Run(context.Background()) }()
			ended := false
			t.Cleanup(func() { // a test failed while it runs: end it, leaking nothing
				if !ended {
					p.Stop()
					<-done
				}
			})
			if during != nil {
				during(t)
			}
			select {
			case err := <-done:
				ended = true
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("the pipeline did not end")
			}
			var events int64
			for _, s := range p.Stats() {
				if s.Name == tt.vertex {
					events = tt.events(s)
				}
			}
			if events < tt.least || tt.exact && events != tt.least {
				t.Fatalf("Stats count %d events at %s, want %d (exact: %v)", events, tt.vertex, tt.least, tt.exact)
			}
			lines := obs.FilterMessage(tt.msg).All()
			var counted int64
			for _, e := range lines {
				f := e.ContextMap()
				if f["vertex"] != tt.vertex {
					t.Errorf("line %v, want vertex %s", f, tt.vertex)
				}
				if tt.reason != "" && f["reason"] != tt.reason {
					t.Errorf("line %v, want reason %q", f, tt.reason)
				}
				if tt.reason == "" && f["error"] != "first call fails" {
					t.Errorf("line %v, want the error that failed the call", f)
				}
				n, ok := f[tt.count].(int64)
				if !ok {
					t.Fatalf("line %v has no count %q", f, tt.count)
				}
				if tt.reason == "" {
					n++ // the failure the line is about, beside those it suppressed
				}
				counted += n
			}
			if len(lines) == 0 || int64(len(lines)) >= events {
				t.Errorf("%d lines %q for %d events: want at least one, and fewer than events", len(lines), tt.msg, events)
			}
			if counted > events || tt.reason != "" && counted != events {
				t.Errorf("the lines count %d events, Stats %d", counted, events)
			}
		})
	}
}
