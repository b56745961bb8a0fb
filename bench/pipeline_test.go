package bench

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/reugn/go-streams/extension"
	"github.com/reugn/go-streams/flow"

	"github.com/runnel-dev/runnel/pipeline"
)

// report sets the benchmark's throughput metric: messages per second end
// to end (the first message generated to the last one sunk).
func report(b *testing.B, start time.Time) {
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msg/s")
}

func identity(_ context.Context, v int64) (int64, error) { return v, nil }

// BenchmarkPipeline runs generator -> map(identity) -> sink(blackhole) for
// b.N messages in each implementation.
func BenchmarkPipeline(b *testing.B) {
	// runnel runs with its defaults: watermarks on (a publisher per
	// writing replica, a fetcher per reading replica, in-memory store).
	b.Run("runnel", func(b *testing.B) { benchRunnel(b) })
	// The same without watermarks: the baseline of their cost.
	b.Run("runnel-wm-off", func(b *testing.B) { benchRunnel(b, pipeline.Watermarks(pipeline.WatermarkConfig{Disabled: true})) })

	// The same three stages as goroutines joined by channels of single
	// items: no tracking, no acks, no backpressure beyond the buffers.
	b.Run("channels", func(b *testing.B) {
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		src, mapped := make(chan int64, 1024), make(chan int64, 1024)
		var wg sync.WaitGroup
		wg.Go(func() {
			defer close(src)
			for i := range int64(b.N) {
				src <- i
			}
		})
		wg.Go(func() {
			defer close(mapped)
			for v := range src {
				out, _ := identity(context.Background(), v)
				mapped <- out
			}
		})
		var n int
		for range mapped {
			n++
		}
		wg.Wait()
		report(b, start)
		if n != b.N {
			b.Fatalf("sink got %d, want %d", n, b.N)
		}
	})

	// The same with channels of 500-item slices: the batching runnel does,
	// without its tracking.
	b.Run("channels-batched", func(b *testing.B) {
		const batch = 500
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		src, mapped := make(chan []int64, 8), make(chan []int64, 8)
		var wg sync.WaitGroup
		wg.Go(func() {
			defer close(src)
			for i := 0; i < b.N; i += batch {
				s := make([]int64, min(batch, b.N-i))
				for k := range s {
					s[k] = int64(i + k)
				}
				src <- s
			}
		})
		wg.Go(func() {
			defer close(mapped)
			for s := range src {
				for k, v := range s {
					s[k], _ = identity(context.Background(), v)
				}
				mapped <- s
			}
		})
		var n int
		for s := range mapped {
			n += len(s)
		}
		wg.Wait()
		report(b, start)
		if n != b.N {
			b.Fatalf("sink got %d, want %d", n, b.N)
		}
	})

	b.Run("go-streams", func(b *testing.B) {
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		in := make(chan any, 1024)
		sink := newCountSink()
		go func() {
			defer close(in)
			for i := range int64(b.N) {
				in <- i
			}
		}()
		extension.NewChanSource(in).
			Via(flow.NewMap(func(v int64) int64 { out, _ := identity(context.Background(), v); return out }, 1)).
			To(sink)
		report(b, start)
		if sink.n != b.N {
			b.Fatalf("sink got %d, want %d", sink.n, b.N)
		}
	})
}

// benchRunnel runs generator -> map(identity) -> sink(blackhole) for b.N
// messages in a runnel pipeline with opts.
func benchRunnel(b *testing.B, opts ...pipeline.Option) { benchRunnelMap(b, "bench", nil, opts...) }

// countSink is a go-streams sink counting what it receives; unlike
// extension.IgnoreSink, its AwaitCompletion waits for the last element, so
// the measurement covers the whole stream.
type countSink struct {
	in   chan any
	done chan struct{}
	n    int
}

func newCountSink() *countSink {
	s := &countSink{in: make(chan any), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for range s.in {
			s.n++
		}
	}()
	return s
}

func (s *countSink) In() chan<- any   { return s.in }
func (s *countSink) AwaitCompletion() { <-s.done }
