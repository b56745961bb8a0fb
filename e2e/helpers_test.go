package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// counter is a sink counting the messages it receives per ID.
type counter[T any] struct {
	mu      sync.Mutex
	ids     map[string]int
	headers map[string]map[string]string // the first delivery's, for failure reports
	n       int
}

func newCounter[T any]() *counter[T] {
	return &counter[T]{ids: map[string]int{}, headers: map[string]map[string]string{}}
}

func (c *counter[T]) Write(_ context.Context, msgs []vertex.Message[T]) ([]vertex.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		if c.ids[m.ID]++; c.ids[m.ID] == 1 && len(m.Headers) > 0 {
			c.headers[m.ID] = m.Headers
		}
	}
	c.n += len(msgs)
	return nil, nil
}

func (c *counter[T]) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.ids))
	for k, v := range c.ids {
		out[k] = v
	}
	return out
}

// headersOf returns the headers id was first delivered with.
func (c *counter[T]) headersOf(id string) map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.headers[id]
}

func (c *counter[T]) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// diff reports the IDs whose counts differ between got and want.
func diff(t *testing.T, sink string, got, want map[string]int) {
	t.Helper()
	bad := 0
	for id, w := range want {
		if g := got[id]; g != w {
			if bad < 5 {
				t.Errorf("sink %s: id %s delivered %d times, want %d", sink, id, g, w)
			}
			bad++
		}
	}
	for id, g := range got {
		if _, ok := want[id]; !ok {
			if bad < 5 {
				t.Errorf("sink %s: id %s delivered %d times, want 0", sink, id, g)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("sink %s: %d ids wrong (got %d ids, want %d)", sink, bad, len(got), len(want))
	}
}

// run runs p and fails the test if it errs or does not finish by itself
// within d.
func run(t *testing.T, p *pipeline.Pipeline, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("the pipeline did not finish by itself within %v", d)
	}
}

// checkDrained asserts that after Run every vertex acked all it read and
// holds nothing.
func checkDrained(t *testing.T, p *pipeline.Pipeline) {
	t.Helper()
	for _, s := range p.Stats() {
		if s.InFlight != 0 || s.Pending != 0 || s.Acked != s.Read {
			t.Errorf("vertex %s: read %d acked %d in flight %d pending %d after Run", s.Name, s.Read, s.Acked, s.InFlight, s.Pending)
		}
	}
}

// underRace returns n, or race when the race detector is on.
func underRace[T any](n, race T) T {
	if raceEnabled {
		return race
	}
	return n
}
