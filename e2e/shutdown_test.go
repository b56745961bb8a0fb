package e2e

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// ackingSource is an endless generator that records which messages the
// pipeline acked to it: those written to the first buffer.
type ackingSource struct {
	*vertex.GeneratorSource[int]
	mu    sync.Mutex
	acked map[string]int
}

func (s *ackingSource) Ack(_ context.Context, msgs []vertex.Message[int]) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		s.acked[m.ID]++
	}
	return nil
}

// TestShutdownMidRunLosesNothingAcked cancels a running pipeline (source ->
// map splitting by tags -> two sinks, replicas and partitions above 1) in
// the middle of a run. "Acked upstream" means the source was told the
// message is safely in the pipeline (Acker.Ack). The assertion: Run
// returns nil, every message acked to the source reaches exactly the sink
// its tag selects exactly once, and no message reaches a sink without
// having been acked (no phantom, no duplicate).
func TestShutdownMidRunLosesNothingAcked(t *testing.T) {
	src := &ackingSource{GeneratorSource: vertex.Generator(func(i int64) int { return int(i) }), acked: map[string]int{}}
	p := pipeline.New("shutdown", pipeline.DrainTimeout(20*time.Second))
	in := pipeline.Source(p, "gen", vertex.Source[int](src), vertex.Replicas(2), vertex.BatchSize(64))
	tagged := pipeline.FlatMap(p, "parity", in, func(_ context.Context, m vertex.Message[int]) ([]vertex.Message[int], error) {
		out := vertex.Derive(m, m.Value)
		out.Tags = []string{"odd"}
		if m.Value%2 == 0 {
			out.Tags = []string{"even"}
		}
		return []vertex.Message[int]{out}, nil
	}, vertex.Replicas(2), vertex.Partitions(4), vertex.BatchSize(32), vertex.BufferCapacity(500))
	even, odd := newCounter[int](), newCounter[int]()
	pipeline.Sink(p, "even", tagged.Tagged("even"), vertex.Sink[int](even), vertex.Replicas(2), vertex.BatchSize(16))
	pipeline.Sink(p, "odd", tagged.Tagged("odd"), vertex.Sink[int](odd), vertex.Replicas(3), vertex.BatchSize(16))

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- p.Run(ctx) }()
	deadline := time.After(30 * time.Second)
	for even.total()+odd.total() < 5000 {
		select {
		case err := <-errc:
			t.Fatalf("Run ended early: %v", err)
		case <-deadline:
			t.Fatal("the sinks received fewer than 5000 messages in 30s")
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	if err := <-errc; err != nil {
		for _, s := range p.Stats() {
			t.Logf("%+v", s)
		}
		t.Fatalf("Run after cancel: %v", err)
	}

	src.mu.Lock()
	acked := src.acked
	src.mu.Unlock()
	wantEven, wantOdd := map[string]int{}, map[string]int{}
	for id, c := range acked {
		if c != 1 {
			t.Errorf("id %s acked %d times", id, c)
		}
		v, _ := strconv.Atoi(id)
		if v%2 == 0 {
			wantEven[id] = 1
		} else {
			wantOdd[id] = 1
		}
	}
	if len(acked) < 5000 {
		t.Fatalf("only %d messages acked", len(acked))
	}
	diff(t, "even", even.snapshot(), wantEven)
	diff(t, "odd", odd.snapshot(), wantOdd)
	checkDrained(t, p)
}
