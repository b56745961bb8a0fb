package pipeline

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/vertex"
)

// collector is a sink recording every message it receives, by ID.
type collector[T any] struct {
	mu   sync.Mutex
	got  map[string]int
	vals []T
}

func newCollector[T any]() *collector[T] { return &collector[T]{got: map[string]int{}} }

func (c *collector[T]) Write(_ context.Context, msgs []vertex.Message[T]) ([]vertex.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		c.got[m.ID]++
		c.vals = append(c.vals, m.Value)
	}
	return nil, nil
}

func (c *collector[T]) values() []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.vals)
}

func runWithin(t *testing.T, p *Pipeline, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("Run ended only by the timeout")
	}
}

func TestMapSinkDeliversEveryMessageOnce(t *testing.T) {
	const n = 10_000
	vals := make([]int, n)
	for i := range vals {
		vals[i] = i
	}
	p := New("basic")
	src := Source(p, "src", vertex.FromSlice(vals), vertex.BatchSize(64))
	doubled := Map(p, "double", src, func(_ context.Context, v int) (int, error) { return 2 * v, nil },
		vertex.Replicas(2), vertex.Partitions(3), vertex.BatchSize(50), vertex.MaxInFlight(200))
	out := newCollector[int]()
	Sink(p, "out", doubled, out, vertex.Replicas(2))
	runWithin(t, p, 30*time.Second)

	if len(out.got) != n {
		t.Fatalf("sink got %d distinct ids, want %d", len(out.got), n)
	}
	for id, c := range out.got {
		if c != 1 {
			t.Fatalf("id %s delivered %d times", id, c)
		}
	}
	got := out.values()
	slices.Sort(got)
	for i, v := range got {
		if v != 2*i {
			t.Fatalf("value %d = %d, want %d", i, v, 2*i)
		}
	}
	for _, s := range p.Stats() {
		if s.InFlight != 0 || s.Pending != 0 {
			t.Errorf("%s: in flight %d, pending %d after Run", s.Name, s.InFlight, s.Pending)
		}
		if s.Kind != "source" && (s.Read != n || s.Acked != n) {
			t.Errorf("%s: read %d acked %d, want %d", s.Name, s.Read, s.Acked, n)
		}
	}
}
