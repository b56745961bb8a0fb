package e2e

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// TestTransientUDFFailuresLoseNothing: a map that fails the first two
// attempts of every third message, with retries, delivers every message
// exactly once, and the retry counter says exactly how many retries ran.
func TestTransientUDFFailuresLoseNothing(t *testing.T) {
	const n = 3000
	var mu sync.Mutex
	attempts := map[int]int{}
	flaky := func(_ context.Context, v int) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		attempts[v]++
		if v%3 == 0 && attempts[v] <= 2 {
			return 0, errors.New("transient")
		}
		return v, nil
	}
	vals := make([]int, n)
	for i := range vals {
		vals[i] = i
	}
	p := pipeline.New("flaky")
	src := pipeline.Source(p, "src", vertex.FromSlice(vals), vertex.BatchSize(50))
	mapped := pipeline.Map(p, "flaky", src, flaky, vertex.Replicas(2), vertex.BatchSize(20), vertex.Concurrency(3),
		vertex.Retry(vertex.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Microsecond, MaxBackoff: time.Millisecond}))
	out := newCounter[int]()
	pipeline.Sink(p, "out", mapped, vertex.Sink[int](out), vertex.Replicas(2))
	run(t, p, 60*time.Second)

	want := map[string]int{}
	for i := range n {
		want[strconv.Itoa(i)] = 1
	}
	diff(t, "out", out.snapshot(), want)
	checkDrained(t, p)
	for _, s := range p.Stats() {
		if s.Name == "flaky" && s.Retried != 2*n/3 {
			t.Errorf("flaky retried %d times, want %d", s.Retried, 2*n/3)
		}
	}
}

// slowSink sleeps for every batch, so the map's writes wait for room.
type slowSink struct {
	counter[int]
	delay time.Duration
}

func (s *slowSink) Write(ctx context.Context, msgs []vertex.Message[int]) ([]vertex.Result, error) {
	time.Sleep(s.delay)
	return s.counter.Write(ctx, msgs)
}

// TestSlowSinkBoundsMemory: behind a slow sink, every replica keeps at most
// MaxInFlight messages in flight and every buffer at most its capacity
// uncommitted (sampled from the counters while running), and nothing is
// lost.
func TestSlowSinkBoundsMemory(t *testing.T) {
	const (
		n           = 4000
		maxInFlight = 24
		capacity    = 100
	)
	p := pipeline.New("slow")
	src := pipeline.Source(p, "gen", vertex.Generator(func(i int64) int { return int(i) }).WithCount(n), vertex.BatchSize(100))
	opts := []vertex.Option{vertex.Replicas(2), vertex.BatchSize(8), vertex.MaxInFlight(maxInFlight), vertex.BufferCapacity(capacity)}
	mapped := pipeline.Map(p, "id", src, func(_ context.Context, v int) (int, error) { return v, nil }, opts...)
	sink := &slowSink{counter: *newCounter[int](), delay: 200 * time.Microsecond}
	pipeline.Sink(p, "slow", mapped, vertex.Sink[int](sink), opts...)

	stop := make(chan struct{})
	var peakPending atomic.Int64
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			for _, s := range p.Stats() {
				if s.Pending > peakPending.Load() {
					peakPending.Store(s.Pending)
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	})
	run(t, p, 60*time.Second)
	close(stop)
	sampler.Wait()

	want := map[string]int{}
	for i := range n {
		want[strconv.Itoa(i)] = 1
	}
	diff(t, "slow", sink.snapshot(), want)
	checkDrained(t, p)
	for _, s := range p.Stats() {
		if s.Kind == "source" {
			continue
		}
		for r, rs := range s.PerReplica {
			if rs.PeakInFlight > maxInFlight || rs.PeakInFlight == 0 {
				t.Errorf("%s replica %d: peak in flight %d, want 1..%d", s.Name, r, rs.PeakInFlight, maxInFlight)
			}
		}
	}
	if pk := peakPending.Load(); pk > capacity || pk == 0 {
		t.Errorf("peak pending %d, want 1..%d", pk, capacity)
	}
}
