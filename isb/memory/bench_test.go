package memory_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/memory"
)

// The benchmarks follow the shape of BufferQueue's published ones: an
// operation moves 8192 int messages (rounded down to a multiple of
// GOMAXPROCS so every goroutine and partition gets the same share), with
// GOMAXPROCS producer goroutines sharing one Producer, and GOMAXPROCS
// partitions and consumers. Each benchmark has its Go channel baseline in the
// same run (a channel of 8192 ints, sent to and received from by the same
// number of goroutines), so the results are compared as ratios. Unbounded
// topics have no capacity; bounded ones have a capacity of 8192.
//
// Work that is not measured (draining after a produce, filling before a
// drain) runs outside the measured time (with the timer stopped, or outside
// the stopwatch of the fan-out drains), through a consumer group, so that
// the topic releases and reuses its segments as in a steady flow and the
// allocation counts show the steady state. The producers and consumers run
// on crews (crew_test.go).

const benchMessages = 8192

type benchSetup struct {
	procs int // producers, partitions and consumers
	n     int // messages per operation
}

func newBenchSetup() benchSetup {
	procs := runtime.GOMAXPROCS(0)
	return benchSetup{procs: procs, n: benchMessages / procs * procs}
}

var benchModes = []struct {
	name     string
	capacity int64
}{
	{"unbounded", 0},
	{"bounded", benchMessages},
}

func (s benchSetup) topic(b *testing.B, capacity int64) *isb.Topic[int] {
	b.Helper()
	topic, err := memory.NewTopic[int]("bench", isb.Partitions(s.procs), isb.Capacity(capacity))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { topic.Close() })
	return topic
}

func reportPerItem(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/item")
}

// stopwatch times the measured part of each operation of the fan-out drain
// benchmarks, which refill the topic between rounds without b.StopTimer:
// StopTimer and StartTimer read the memory statistics, which stops the
// world twice per round, and restarting the other thread after that is a
// futex wake-up inside the measured part. Their ns/op therefore includes
// the refill; ns/item is the drain alone.
type stopwatch struct{ total time.Duration }

func (w *stopwatch) time(f func()) {
	start := time.Now()
	f()
	w.total += time.Since(start)
}

func (w *stopwatch) reportPerItem(b *testing.B, n int) {
	b.ReportMetric(float64(w.total.Nanoseconds())/float64(b.N)/float64(n), "ns/item")
}

// drainAll pulls and commits n items with c (which owns every partition).
func drainAll(b *testing.B, c *isb.PullConsumer[int], n int) {
	ctx := context.Background()
	for got := 0; got < n; {
		batch, err := c.Pull(ctx)
		if err != nil {
			b.Fatal(err)
		}
		got += len(batch.Items)
	}
	if err := c.Commit(); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkProduce(b *testing.B) {
	s := newBenchSetup()
	ctx := context.Background()

	b.Run("chan", func(b *testing.B) {
		ch := make(chan int, benchMessages)
		send := newCrew(b, s.procs, func(int) {
			for i := range s.n / s.procs {
				ch <- i
			}
		})
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			send.run()
			b.StopTimer()
			for range s.n {
				<-ch
			}
			b.StartTimer()
		}
		reportPerItem(b, s.n)
	})

	for _, m := range benchModes {
		for _, kind := range []string{"single", "batch"} {
			b.Run(kind+"/"+m.name, func(b *testing.B) {
				topic := s.topic(b, m.capacity)
				p := topic.Producer(nil)
				drain, err := topic.PullConsumer("drain", isb.BatchSize(benchMessages))
				if err != nil {
					b.Fatal(err)
				}
				defer drain.Close()
				batches := make([][]int, s.procs)
				for i := range batches {
					batches[i] = make([]int, s.n/s.procs)
				}
				produce := newCrew(b, s.procs, func(i int) {
					if kind == "batch" {
						if err := p.ProduceBatch(ctx, batches[i]); err != nil {
							b.Error(err)
						}
						return
					}
					for v := range s.n / s.procs {
						if err := p.Produce(ctx, v); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					produce.run()
					b.StopTimer()
					drainAll(b, drain, s.n)
					b.StartTimer()
				}
				reportPerItem(b, s.n)
			})
		}
	}
}

func BenchmarkDrain(b *testing.B) {
	s := newBenchSetup()
	ctx := context.Background()

	// The baseline receives one item at a time: a channel has no batch read.
	b.Run("chan", func(b *testing.B) {
		ch := make(chan int, benchMessages)
		receive := newSpinningCrew(b, s.procs, func(int) {
			for range s.n / s.procs {
				<-ch
			}
		})
		b.ReportAllocs()
		b.ResetTimer()
		var w stopwatch
		for range b.N {
			for i := range s.n {
				ch <- i
			}
			w.time(receive.run)
		}
		w.reportPerItem(b, s.n)
	})

	for _, m := range benchModes {
		for _, size := range []int{1, 100, 1000} {
			b.Run("batch="+strconv.Itoa(size)+"/"+m.name, func(b *testing.B) {
				topic := s.topic(b, m.capacity)
				p := topic.Producer(nil)
				cs, err := topic.PullConsumers("bench", s.procs, isb.BatchSize(size))
				if err != nil {
					b.Fatal(err)
				}
				defer func() {
					for _, c := range cs {
						c.Close()
					}
				}()
				fill := make([]int, s.n)
				// Round-robin over procs partitions puts n/procs items in
				// each, so every consumer (one partition each) drains that.
				consume := newSpinningCrew(b, s.procs, func(i int) {
					c := cs[i]
					for got := 0; got < s.n/s.procs; {
						batch, err := c.Pull(ctx)
						if err != nil {
							b.Error(err)
							return
						}
						got += len(batch.Items)
					}
					if err := c.Commit(); err != nil {
						b.Error(err)
					}
				})
				b.ReportAllocs()
				b.ResetTimer()
				var w stopwatch
				for range b.N {
					if err := p.ProduceBatch(ctx, fill); err != nil {
						b.Fatal(err)
					}
					w.time(consume.run)
				}
				w.reportPerItem(b, s.n)
			})
		}
	}
}

// BenchmarkDrainSerial is a diagnostic beside BenchmarkDrain: one consumer
// owning all GOMAXPROCS partitions drains on the benchmark's goroutine, and
// the channel baseline is drained by one goroutine too. With no goroutine to
// wake per operation it shows the cost per item of the read path alone,
// which in BenchmarkDrain's large batches is smaller than the fixed cost of
// starting GOMAXPROCS goroutines.
func BenchmarkDrainSerial(b *testing.B) {
	s := newBenchSetup()
	ctx := context.Background()

	b.Run("chan", func(b *testing.B) {
		ch := make(chan int, benchMessages)
		b.ReportAllocs()
		for range b.N {
			b.StopTimer()
			for i := range s.n {
				ch <- i
			}
			b.StartTimer()
			for range s.n {
				<-ch
			}
		}
		reportPerItem(b, s.n)
	})

	for _, m := range benchModes {
		for _, size := range []int{1, 100, 1000} {
			b.Run("batch="+strconv.Itoa(size)+"/"+m.name, func(b *testing.B) {
				topic := s.topic(b, m.capacity)
				p := topic.Producer(nil)
				c, err := topic.PullConsumer("bench", isb.BatchSize(size))
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				fill := make([]int, s.n)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					if err := p.ProduceBatch(ctx, fill); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					drainAll(b, c, s.n)
				}
				reportPerItem(b, s.n)
			})
		}
	}
}
