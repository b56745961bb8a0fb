package memory_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// The benchmarks run their producers and consumers on a crew: n chunks of
// work started at once, once per round, like BufferQueue's Parallel.For
// over GOMAXPROCS chunks. A round allocates nothing, so the allocation
// counts are the code's, and every baseline runs on the same kind of crew
// as the code it is compared with.

// crew runs f(0..n-1) on n goroutines that live as long as the benchmark
// and park between rounds. Starting a round wakes them (on the VMs this
// runs on, 5-10 µs of futex wake-ups), which is noise beside a round of
// single-item produces (hundreds of µs) but not beside a batched drain:
// that uses spinningCrew.
type crew struct {
	start []chan struct{}
	round sync.WaitGroup
	exit  sync.WaitGroup
}

func newCrew(b *testing.B, n int, f func(i int)) *crew {
	c := &crew{start: make([]chan struct{}, n)}
	for i := range c.start {
		ch := make(chan struct{}, 1)
		c.start[i] = ch
		c.exit.Go(func() {
			for range ch {
				f(i)
				c.round.Done()
			}
		})
	}
	b.Cleanup(func() {
		for _, ch := range c.start {
			close(ch)
		}
		c.exit.Wait()
	})
	return c
}

// run runs one round and waits for it.
func (c *crew) run() {
	c.round.Add(len(c.start))
	for _, ch := range c.start {
		ch <- struct{}{}
	}
	c.round.Wait()
}

// spinningCrew runs f(0) on the caller's goroutine, as Parallel.For runs a
// chunk on the calling thread, and f(1..n-1) on goroutines that live as
// long as the benchmark. Between rounds these poll an atomic and yield
// (runtime.Gosched) instead of parking, as .NET's thread-pool workers spin
// before they block, and the caller waits for them the same way: with n
// goroutines on GOMAXPROCS = n threads a round makes no system call, so a
// round of a few microseconds measures the queue rather than the VM's
// futex wake-ups.
type spinningCrew struct {
	f       func(i int)
	n       int
	round   atomic.Int64 // rounds started
	pending atomic.Int64 // goroutines other than the caller still in the current round
	stop    atomic.Bool
	exit    sync.WaitGroup
}

func newSpinningCrew(b *testing.B, n int, f func(i int)) *spinningCrew {
	c := &spinningCrew{f: f, n: n}
	for i := 1; i < n; i++ {
		c.exit.Go(func() {
			for seen := int64(0); ; seen++ {
				for c.round.Load() == seen {
					if c.stop.Load() {
						return
					}
					runtime.Gosched()
				}
				f(i)
				c.pending.Add(-1)
			}
		})
	}
	b.Cleanup(func() {
		c.stop.Store(true)
		c.exit.Wait()
	})
	return c
}

// run runs one round and waits for it.
func (c *spinningCrew) run() {
	c.pending.Store(int64(c.n - 1))
	c.round.Add(1)
	c.f(0)
	for c.pending.Load() != 0 {
		runtime.Gosched()
	}
}
