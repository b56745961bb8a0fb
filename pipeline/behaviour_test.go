package pipeline

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/forwarder"
	"github.com/runnel-dev/runnel/vertex"
)

func ints(n int) []int {
	v := make([]int, n)
	for i := range v {
		v[i] = i
	}
	return v
}

// sortedValues returns the values c received, sorted.
func sortedValues(c *collector[int]) []int {
	v := c.values()
	slices.Sort(v)
	return v
}

func filter(n int, keep func(int) bool) []int {
	var out []int
	for i := range n {
		if keep(i) {
			out = append(out, i)
		}
	}
	return out
}

func stat(t *testing.T, p *Pipeline, name string) VertexStats {
	t.Helper()
	for _, s := range p.Stats() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no vertex %q", name)
	return VertexStats{}
}

func TestTagsSplitJoinAndDrop(t *testing.T) {
	const n = 1000
	p := New("tags")
	src := Source(p, "src", vertex.FromSlice(ints(n)), vertex.BatchSize(37))
	tagged := FlatMap(p, "tag", src, func(_ context.Context, m vertex.Message[int]) ([]vertex.Message[int], error) {
		out := vertex.Derive(m, m.Value)
		out.Tags = nil
		switch v := m.Value; {
		case v%7 == 0:
			out.Tags = []string{vertex.DropTag}
		default:
			if v%3 == 0 {
				out.Tags = append(out.Tags, "fizz")
			}
			if v%5 == 0 {
				out.Tags = append(out.Tags, "buzz")
			}
		}
		return []vertex.Message[int]{out}, nil
	}, vertex.Replicas(2), vertex.Concurrency(3))
	fizz, buzz, both, plain, joined := newCollector[int](), newCollector[int](), newCollector[int](), newCollector[int](), newCollector[int]()
	Sink(p, "fizz", tagged.Tagged("fizz"), fizz)
	Sink(p, "buzz", tagged.Tagged("buzz"), buzz)
	Sink(p, "both", tagged.Where(vertex.AllTags("fizz", "buzz")), both)
	plainS := Map(p, "plain", tagged.Where(vertex.Not(vertex.AnyTag("fizz", "buzz"))), ident)
	Sink(p, "plain-out", plainS, plain)
	// A join: the fizz branch again and the plain branch, into one vertex.
	Sink(p, "joined", Join(tagged.Tagged("fizz"), plainS), joined, vertex.Replicas(2))
	runWithin(t, p, 30*time.Second)

	dropped := func(v int) bool { return v%7 == 0 }
	isFizz := func(v int) bool { return !dropped(v) && v%3 == 0 }
	isBuzz := func(v int) bool { return !dropped(v) && v%5 == 0 }
	isPlain := func(v int) bool { return !dropped(v) && !isFizz(v) && !isBuzz(v) }
	checks := []struct {
		name string
		c    *collector[int]
		want []int
	}{
		{"fizz", fizz, filter(n, isFizz)},
		{"buzz", buzz, filter(n, isBuzz)},
		{"both", both, filter(n, func(v int) bool { return isFizz(v) && isBuzz(v) })},
		{"plain", plain, filter(n, isPlain)},
		{"joined", joined, filter(n, func(v int) bool { return isFizz(v) || isPlain(v) })},
	}
	for _, c := range checks {
		if got := sortedValues(c.c); !slices.Equal(got, c.want) {
			t.Errorf("sink %s got %d values, want %d: %v...", c.name, len(got), len(c.want), got[:min(10, len(got))])
		}
	}
	if s := stat(t, p, "tag"); s.Dropped != int64(len(filter(n, dropped))) || s.Acked != n {
		t.Errorf("tag: dropped %d acked %d, want %d and %d", s.Dropped, s.Acked, len(filter(n, dropped)), n)
	}
}

func TestDiscardWhenFullCountsDrops(t *testing.T) {
	const n = 100
	p := New("discard")
	src := Source(p, "src", vertex.FromSlice(ints(n)), vertex.BatchSize(n))
	// The sink holds its first batch until the source has written (or
	// discarded) everything, so exactly capacity messages fit.
	gate := make(chan struct{})
	out := newCollector[int]()
	blocking := vertex.SinkFunc[int](func(ctx context.Context, msgs []vertex.Message[int]) ([]vertex.Result, error) {
		<-gate
		return out.Write(ctx, msgs)
	})
	Sink(p, "out", src.DiscardWhenFull(), blocking, vertex.BufferCapacity(10), vertex.BatchSize(10), vertex.MaxInFlight(10), vertex.Concurrency(1))
	go func() {
		for stat(t, p, "src").Acked < n {
			time.Sleep(time.Millisecond)
		}
		close(gate)
	}()
	runWithin(t, p, 30*time.Second)
	if got := sortedValues(out); !slices.Equal(got, ints(10)) {
		t.Errorf("sink got %v, want the first 10", got)
	}
	if s := stat(t, p, "src"); s.Dropped != n-10 || s.Written != 10 {
		t.Errorf("src dropped %d written %d, want %d and 10", s.Dropped, s.Written, n-10)
	}
}

func TestOrderByKey(t *testing.T) {
	const n = 4000
	p := New("ordered")
	src := Source(p, "gen", vertex.Generator(func(i int64) int { return int(i) }, vertex.Count(n), vertex.Keys(5)), vertex.BatchSize(64))
	var mu sync.Mutex
	last := map[string]int{}
	violations := 0
	ordered := Map(p, "ordered", src, func(_ context.Context, v int) (int, error) {
		key := "k" + strconv.Itoa(v%5)
		mu.Lock()
		defer mu.Unlock()
		if prev, ok := last[key]; ok && prev >= v {
			violations++
		}
		last[key] = v
		return v, nil
	}, vertex.OrderByKey(), vertex.Replicas(2), vertex.Partitions(3), vertex.Concurrency(4), vertex.BatchSize(50))
	out := newCollector[int]()
	Sink(p, "out", ordered, out)
	runWithin(t, p, 30*time.Second)
	if violations != 0 {
		t.Errorf("%d values of a key arrived out of order", violations)
	}
	if got := sortedValues(out); !slices.Equal(got, ints(n)) {
		t.Errorf("sink got %d values, want %d", len(got), n)
	}
}

func TestMapStreamAndBatchMap(t *testing.T) {
	const n = 500
	p := New("forms")
	src := Source(p, "src", vertex.FromSlice(ints(n)))
	tripled := MapStream(p, "triple", src, func(_ context.Context, m vertex.Message[int], emit func(vertex.Message[int]) error) error {
		for k := range 3 {
			out := vertex.Derive(m, 3*m.Value+k)
			out.ID = m.ID + "/" + strconv.Itoa(k)
			if err := emit(out); err != nil {
				return err
			}
		}
		return nil
	}, vertex.Replicas(2))
	var calls, biggest int
	var mu sync.Mutex
	summed := BatchMap(p, "negate", tripled, func(_ context.Context, ms []vertex.Message[int]) ([][]vertex.Message[int], error) {
		mu.Lock()
		calls++
		biggest = max(biggest, len(ms))
		mu.Unlock()
		res := make([][]vertex.Message[int], len(ms))
		for i, m := range ms {
			res[i] = []vertex.Message[int]{vertex.Derive(m, -m.Value)}
		}
		return res, nil
	}, vertex.BatchSize(100))
	out := newCollector[int]()
	Sink(p, "out", summed, out)
	runWithin(t, p, 30*time.Second)
	got := sortedValues(out)
	if len(got) != 3*n || got[0] != -(3*n-1) || got[len(got)-1] != 0 {
		t.Fatalf("sink got %d values from %v to %v, want %d from %d to 0", len(got), got[0], got[len(got)-1], 3*n, -(3*n - 1))
	}
	for i := 1; i < len(got); i++ {
		if got[i] != got[i-1]+1 {
			t.Fatalf("values not contiguous at %d: %d then %d", i, got[i-1], got[i])
		}
	}
	if calls == 0 || biggest > 100 || calls < 3*n/100 {
		t.Errorf("batch map: %d calls, biggest batch %d; want at least %d calls of at most 100", calls, biggest, 3*n/100)
	}
}

func TestBatchMapResultCountFailsRun(t *testing.T) {
	p := New("badcount")
	src := Source(p, "src", vertex.FromSlice(ints(10)))
	bad := BatchMap(p, "bad", src, func(_ context.Context, ms []vertex.Message[int]) ([][]vertex.Message[int], error) {
		return nil, nil
	})
	Sink(p, "out", bad, vertex.Blackhole[int]())
	err := p.Run(context.Background())
	if !errors.Is(err, vertex.ErrResultCount) {
		t.Fatalf("Run: %v, want ErrResultCount", err)
	}
}

func TestRetryThenDrop(t *testing.T) {
	const n = 1000
	p := New("drop")
	src := Source(p, "src", vertex.FromSlice(ints(n)))
	m := Map(p, "picky", src, func(_ context.Context, v int) (int, error) {
		if v%10 == 0 {
			return 0, errors.New("never")
		}
		return v, nil
	}, vertex.Retry(vertex.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Microsecond, OnExhausted: vertex.DropMessage}))
	out := newCollector[int]()
	Sink(p, "out", m, out)
	runWithin(t, p, 30*time.Second)
	if got, want := sortedValues(out), filter(n, func(v int) bool { return v%10 != 0 }); !slices.Equal(got, want) {
		t.Errorf("sink got %d values, want %d", len(got), len(want))
	}
	s := stat(t, p, "picky")
	if s.Dropped != n/10 || s.Retried != 2*n/10 || s.Acked != n {
		t.Errorf("picky: dropped %d retried %d acked %d, want %d, %d, %d", s.Dropped, s.Retried, s.Acked, n/10, 2*n/10, n)
	}
}

func TestExhaustedRetriesFailTheRun(t *testing.T) {
	p := New("fail")
	src := Source(p, "src", vertex.Generator(func(i int64) int { return int(i) }))
	m := Map(p, "broken", src, func(_ context.Context, v int) (int, error) {
		if v == 5 {
			return 0, errors.New("boom")
		}
		return v, nil
	}, vertex.Retry(vertex.RetryPolicy{MaxAttempts: 2, InitialBackoff: time.Microsecond}))
	Sink(p, "out", m, vertex.Blackhole[int]())
	err := p.Run(context.Background())
	var pe *forwarder.ProcessError
	if !errors.As(err, &pe) || !errors.Is(err, forwarder.ErrRetriesExhausted) {
		t.Fatalf("Run: %v, want a *forwarder.ProcessError wrapping ErrRetriesExhausted", err)
	}
	if pe.Vertex != "broken" || pe.MessageID != "5" || pe.Attempts != 2 {
		t.Errorf("error names vertex %q message %q after %d attempts, want broken, 5, 2", pe.Vertex, pe.MessageID, pe.Attempts)
	}
}

func TestSinkRetryAndFallback(t *testing.T) {
	const n = 400
	p := New("fallback")
	src := Source(p, "src", vertex.FromSlice(ints(n)))
	main, fb := newCollector[int](), newCollector[int]()
	sink := vertex.SinkFunc[int](func(ctx context.Context, msgs []vertex.Message[int]) ([]vertex.Result, error) {
		res := make([]vertex.Result, len(msgs))
		var ok []vertex.Message[int]
		for i, m := range msgs {
			switch {
			case m.Value%2 == 1:
				res[i] = vertex.ResultFallback
			case m.Value%4 == 0:
				res[i] = vertex.ResultRetry
			default:
				ok = append(ok, m)
			}
		}
		_, _ = main.Write(ctx, ok)
		return res, nil
	})
	SinkWithFallback(p, "out", src, sink, vertex.Sink[int](fb), vertex.Replicas(2),
		vertex.Retry(vertex.RetryPolicy{MaxAttempts: 2, InitialBackoff: time.Microsecond, OnExhausted: vertex.ToFallback}))
	runWithin(t, p, 30*time.Second)
	if got, want := sortedValues(main), filter(n, func(v int) bool { return v%4 == 2 }); !slices.Equal(got, want) {
		t.Errorf("main sink got %d values, want %d", len(got), len(want))
	}
	if got, want := sortedValues(fb), filter(n, func(v int) bool { return v%4 != 2 }); !slices.Equal(got, want) {
		t.Errorf("fallback got %d values, want %d", len(got), len(want))
	}
	s := stat(t, p, "out")
	if s.Written != n/4 || s.Fallback != 3*n/4 || s.Retried != n/4 || s.Acked != n {
		t.Errorf("out: written %d fallback %d retried %d acked %d, want %d %d %d %d", s.Written, s.Fallback, s.Retried, s.Acked, n/4, 3*n/4, n/4, n)
	}
}

func TestStatsBeforeRun(t *testing.T) {
	p := New("idle")
	Sink(p, "out", Source(p, "src", vertex.FromSlice([]int{1})), vertex.Blackhole[int]())
	st := p.Stats()
	if len(st) != 2 || st[0].Name != "src" || st[1].Name != "out" || st[0].Kind != "source" || st[1].Kind != "sink" {
		t.Fatalf("Stats before Run: %+v", st)
	}
	if st[1].Counters != (Counters{}) || st[1].Pending != 0 {
		t.Fatalf("Stats before Run not zero: %+v", st[1])
	}
}

// A sink that never finishes makes the drain give up after DrainTimeout:
// Run returns ErrDrainTimeout and every goroutine still ends.
func TestDrainTimeout(t *testing.T) {
	p := New("stuck", DrainTimeout(20*time.Millisecond))
	src := Source(p, "gen", vertex.Generator(func(i int64) int { return int(i) }))
	started := make(chan struct{})
	var once sync.Once
	Sink(p, "stuck", src, vertex.SinkFunc[int](func(ctx context.Context, _ []vertex.Message[int]) ([]vertex.Result, error) {
		once.Do(func() { close(started) })
		<-ctx.Done() // only the hard stop ends it
		return nil, ctx.Err()
	}))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- p.Run(ctx) }()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, ErrDrainTimeout) {
		t.Fatalf("Run: %v, want ErrDrainTimeout", err)
	}
}
