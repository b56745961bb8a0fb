package bench

import (
	"hash/maphash"
	"strconv"
	"sync"
	"testing"
	"time"
)

// benchHandwrittenCount is the keyed fixed-window count written by hand in
// the shape of the reduce benchmark, as a Go team would write it without a
// stream processor: a generator cuts the same input (nkeys keys, one
// microsecond of event time apart) into slices of 500, a dispatcher sends
// each message to one of two workers by a hash of its key (slices of 500
// again), and each worker counts (window, key) in a map of its own and
// emits the windows its input's event time has passed. No tracking, acks,
// watermarks or backpressure beyond the channels' buffers: the floor of the
// work a reduce does.
func benchHandwrittenCount(b *testing.B, nkeys int) {
	const batch, workers = 500, 2
	window := time.Second.Nanoseconds()
	base := time.Unix(1_800_000_000, 0).UnixNano()
	keys := make([]string, nkeys)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	type msg struct {
		key string
		at  int64 // event time, ns
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	gen := make(chan []msg, 8)
	go func() {
		defer close(gen)
		for i := 0; i < b.N; i += batch {
			s := make([]msg, min(batch, b.N-i))
			for k := range s {
				n := int64(i + k)
				s[k] = msg{key: keys[n%int64(nkeys)], at: base + n*time.Microsecond.Nanoseconds()}
			}
			gen <- s
		}
	}()
	ins := make([]chan []msg, workers)
	for w := range ins {
		ins[w] = make(chan []msg, 8)
	}
	go func() { // dispatch by key hash
		seed := maphash.MakeSeed()
		out := make([][]msg, workers)
		for s := range gen {
			for _, m := range s {
				w := maphash.String(seed, m.key) % workers
				out[w] = append(out[w], m)
				if len(out[w]) == batch {
					ins[w] <- out[w]
					out[w] = make([]msg, 0, batch)
				}
			}
		}
		for w := range ins {
			if len(out[w]) > 0 {
				ins[w] <- out[w]
			}
			close(ins[w])
		}
	}()
	var total, results int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	type win struct {
		start  int64
		counts map[string]int64
	}
	for w := range workers {
		wg.Go(func() {
			// Open windows, oldest first: event times only grow here, so
			// a message belongs to the newest window or opens the next,
			// and windows close from the front.
			var open []win
			var sum, n int64
			for s := range ins[w] {
				for _, m := range s {
					st := m.at - (m.at-base)%window
					if len(open) == 0 || open[len(open)-1].start != st {
						open = append(open, win{start: st, counts: make(map[string]int64, nkeys/workers)})
					}
					open[len(open)-1].counts[m.key]++
				}
				for len(open) > 0 && open[0].start+window <= s[0].at {
					for _, c := range open[0].counts {
						sum += c
						n++
					}
					open = open[1:]
				}
			}
			for _, o := range open {
				for _, c := range o.counts {
					sum += c
					n++
				}
			}
			mu.Lock()
			total, results = total+sum, results+n
			mu.Unlock()
		})
	}
	wg.Wait()
	report(b, start)
	if total != int64(b.N) {
		b.Fatalf("the counts add up to %d, want %d", total, b.N)
	}
	b.ReportMetric(float64(results)/float64(b.N), "results/msg")
}
