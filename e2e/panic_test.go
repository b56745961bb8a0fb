package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// fastRetry retries at once, up to attempts, then does what onExhausted says.
func fastRetry(attempts int, onExhausted vertex.Exhausted) vertex.Option {
	return vertex.Retry(vertex.RetryPolicy{MaxAttempts: attempts, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, OnExhausted: onExhausted})
}

// panicker panics when it meets value 7: the first time only (once), or
// every time.
type panicker struct {
	once   bool
	panics atomic.Int64
}

func (p *panicker) maybe(v int) {
	if v == 7 && (!p.once || p.panics.Load() == 0) {
		p.panics.Add(1)
		panic(fmt.Sprintf("boom %d", v))
	}
}

// withPanickingStage adds, between a source of 0..99 and the returned
// sink, one vertex of kind whose user code panics on value 7 as pk says.
// For kind "sink" the sink itself panics.
func withPanickingStage(p *pipeline.Pipeline, kind string, pk *panicker, opts ...vertex.Option) *counter[int] {
	vals := make([]int, 100)
	for i := range vals {
		vals[i] = i
	}
	src := pipeline.Source(p, "src", vertex.Source[int](vertex.FromSlice(vals)))
	var mid pipeline.Stream[int]
	out := newCounter[int]()
	switch kind {
	case "map":
		mid = pipeline.Map(p, "stage", src, func(_ context.Context, v int) (int, error) { pk.maybe(v); return v, nil }, opts...)
	case "flatmap":
		mid = pipeline.FlatMap(p, "stage", src, func(_ context.Context, m vertex.Message[int]) ([]vertex.Message[int], error) {
			pk.maybe(m.Value)
			return []vertex.Message[int]{vertex.Derive(m, m.Value)}, nil
		}, opts...)
	case "mapstream":
		mid = pipeline.MapStream(p, "stage", src, func(_ context.Context, m vertex.Message[int], emit func(vertex.Message[int]) error) error {
			pk.maybe(m.Value)
			return emit(vertex.Derive(m, m.Value))
		}, opts...)
	case "batchmap":
		mid = pipeline.BatchMap(p, "stage", src, func(_ context.Context, ms []vertex.Message[int]) ([][]vertex.Message[int], error) {
			out := make([][]vertex.Message[int], len(ms))
			for i, m := range ms {
				pk.maybe(m.Value)
				out[i] = []vertex.Message[int]{vertex.Derive(m, m.Value)}
			}
			return out, nil
		}, opts...)
	case "sink":
		var mu sync.Mutex
		pipeline.Sink(p, "stage", src, vertex.Func(func(ctx context.Context, msgs []vertex.Message[int]) error {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				pk.maybe(m.Value)
			}
			_, err := out.Write(ctx, msgs)
			return err
		}), opts...)
		return out
	}
	pipeline.Sink(p, "out", mid, vertex.Sink[int](out))
	return out
}

var panickingKinds = []string{"map", "flatmap", "mapstream", "batchmap", "sink"}

// TestPanicIsRetried: user code that panics once (map, flat map, map
// stream, batch map, sink) is retried as an error would be; the process
// lives on and every message is delivered exactly once.
func TestPanicIsRetried(t *testing.T) {
	for _, kind := range panickingKinds {
		t.Run(kind, func(t *testing.T) {
			p := pipeline.New("panic-once-" + kind)
			pk := &panicker{once: true}
			out := withPanickingStage(p, kind, pk, fastRetry(3, vertex.FailPipeline), vertex.BatchSize(10))
			run(t, p, 30*time.Second)
			want := map[string]int{}
			for i := range 100 {
				want[strconv.Itoa(i)] = 1
			}
			diff(t, "out", out.snapshot(), want)
			if n := pk.panics.Load(); n != 1 {
				t.Errorf("%d panics, want 1", n)
			}
			if s := p.Stats()[1]; s.Retried < 1 {
				t.Errorf("stage retried %d, want at least 1 (the panic is an error of its message)", s.Retried)
			}
		})
	}
}

// TestPanicExhaustedFailsWithPanicError: user code that always panics
// fails the pipeline once its retries are used up, with an error that
// carries the panic value, the stack naming the panicking function, and
// the message; Run returns it instead of the process dying.
func TestPanicExhaustedFailsWithPanicError(t *testing.T) {
	for _, kind := range panickingKinds {
		t.Run(kind, func(t *testing.T) {
			p := pipeline.New("panic-fail-" + kind)
			pk := &panicker{}
			withPanickingStage(p, kind, pk, fastRetry(2, vertex.FailPipeline), vertex.BatchSize(1), vertex.Concurrency(1))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := p.Run(ctx)
			var pe *vertex.PanicError
			if !errors.As(err, &pe) || !errors.Is(err, vertex.ErrPanic) {
				t.Fatalf("Run = %v; want a *vertex.PanicError", err)
			}
			if pe.Value != "boom 7" || !strings.Contains(string(pe.Stack), "e2e.(*panicker).maybe") {
				t.Errorf("panic value %v, stack:\n%s\nwant \"boom 7\" and a stack naming panicker.maybe", pe.Value, pe.Stack)
			}
			var proc *vertex.ProcessError
			if !errors.As(err, &proc) || proc.Vertex != "stage" {
				t.Fatalf("Run = %v; want a *vertex.ProcessError of vertex stage", err)
			}
			// A sink's message error may come from any message of the
			// batch (here batches of one); a map names the message.
			if kind != "batchmap" && proc.MessageID != "7" {
				t.Errorf("the error names message %q, want \"7\"", proc.MessageID)
			}
			if n := pk.panics.Load(); n != 2 {
				t.Errorf("%d panics, want 2 (two attempts)", n)
			}
		})
	}
}

// TestPanicDroppedByPolicy: under DropMessage, the message whose code
// always panics is dropped and counted; the others are delivered.
func TestPanicDroppedByPolicy(t *testing.T) {
	p := pipeline.New("panic-drop")
	pk := &panicker{}
	out := withPanickingStage(p, "map", pk, fastRetry(3, vertex.DropMessage))
	run(t, p, 30*time.Second)
	want := map[string]int{}
	for i := range 100 {
		if i != 7 {
			want[strconv.Itoa(i)] = 1
		}
	}
	diff(t, "out", out.snapshot(), want)
	if s := p.Stats()[1]; s.Dropped != 1 || pk.panics.Load() != 3 {
		t.Errorf("dropped %d after %d panics, want 1 after 3", s.Dropped, pk.panics.Load())
	}
}

// panickingSource panics on its second read.
type panickingSource struct{ reads atomic.Int64 }

func (s *panickingSource) Read(_ context.Context, max int) ([]vertex.Message[int], error) {
	if s.reads.Add(1) == 2 {
		panic("source boom")
	}
	return []vertex.Message[int]{{ID: "x", Value: 1}}, nil
}

// TestPanicInSourceFailsThePipeline: a source that panics fails the
// pipeline with a *vertex.PanicError; the process lives on.
func TestPanicInSourceFailsThePipeline(t *testing.T) {
	p := pipeline.New("panic-source")
	src := pipeline.Source(p, "src", vertex.Source[int](&panickingSource{}))
	pipeline.Sink(p, "out", src, vertex.Sink[int](newCounter[int]()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := p.Run(ctx)
	var pe *vertex.PanicError
	if !errors.As(err, &pe) || pe.Value != "source boom" {
		t.Fatalf("Run = %v; want a *vertex.PanicError of \"source boom\"", err)
	}
}
