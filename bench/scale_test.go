package bench

import (
	"context"
	"fmt"
	"hash/maphash"
	"io"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// scaleKeys are the key counts of the scale benchmarks (issue 24).
var scaleKeys = []int{10_000, 100_000, 1_000_000}

// BenchmarkReduceScale is BenchmarkReduce's keyed fixed-window count and
// its hand-written floor at 10,000, 100,000 and 1,000,000 keys, in one
// run. At one message per microsecond of event time a one-second window
// holds a million messages: 100 per key at 10,000 keys, one per key at
// 1,000,000, so the larger key counts measure the cost of a window per key
// more than the cost per message.
//
//	cd bench && go test -run '^$' -bench 'BenchmarkReduceScale' -benchtime 3000000x -count 3
func BenchmarkReduceScale(b *testing.B) {
	for _, keys := range scaleKeys {
		b.Run(fmt.Sprintf("keys=%d/reduce", keys), func(b *testing.B) { benchReduce(b, keys, nil) })
		b.Run(fmt.Sprintf("keys=%d/handwritten", keys), func(b *testing.B) { benchHandwrittenCount(b, keys) })
	}
}

// BenchmarkReduceReplicas runs the keyed count (10,000 keys) with one and
// with two reduce replicas in one run: on two cores the second replica
// must not make it slower (issue 24).
//
//	cd bench && go test -run '^$' -bench 'BenchmarkReduceReplicas' -benchtime 3000000x -count 6
func BenchmarkReduceReplicas(b *testing.B) {
	for _, r := range []int{1, 2} {
		b.Run(fmt.Sprintf("replicas=%d", r), func(b *testing.B) { benchReduce(b, reduceKeys, nil, vertex.Replicas(r)) })
	}
}

// BenchmarkOpenWindowBytes measures the heap one open (window, key) costs
// in the reduce and in the hand-written count, at each scale key count:
// the same number of messages (keys of them) is counted once over keys
// distinct keys and once over keys/10, all in one window that stays open,
// and the difference in live heap (after a GC) divided by the difference
// in open windows is the cost of one. Each reading is the heap grown
// since the input's key lists were made (those are the user's, in both),
// and both runs hold the same messages in the same buffers, so what the
// ISB and the pipeline cost cancels out. Reported as B/window; the time
// per op means nothing here.
//
//	cd bench && go test -run '^$' -bench 'BenchmarkOpenWindowBytes' -benchtime 1x -count 3
func BenchmarkOpenWindowBytes(b *testing.B) {
	for _, keys := range scaleKeys {
		for _, kind := range []string{"reduce", "handwritten"} {
			b.Run(fmt.Sprintf("keys=%d/%s", keys, kind), func(b *testing.B) {
				heap := heapOpenRunnel
				if kind == "handwritten" {
					heap = heapOpenHandwritten
				}
				var perWindow float64
				for range b.N {
					all := heap(b, keys, keys)
					tenth := heap(b, keys, keys/10)
					perWindow += (float64(all) - float64(tenth)) / float64(keys-keys/10)
				}
				b.ReportMetric(perWindow/float64(b.N), "B/window")
			})
		}
	}
}

// liveHeap is the heap in use after two collections.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// scaleInput is n messages over keys distinct keys (key strings made
// beforehand), one microsecond of event time apart from base: all inside
// one hour-long window.
type scaleInput struct {
	base time.Time
	keys [][]string
	n    int
}

func newScaleInput(n, keys int) scaleInput {
	in := scaleInput{base: time.Unix(1_800_000_000, 0), keys: make([][]string, keys), n: n}
	for i := range in.keys {
		in.keys[i] = []string{"k" + strconv.Itoa(i)}
	}
	return in
}

// heldSource emits the input, then holds its end until release is
// closed, so the reduce keeps every window open while the heap is read.
type heldSource struct {
	in      scaleInput
	next    int
	release chan struct{}
}

func (s *heldSource) Read(ctx context.Context, max int) ([]vertex.Message[int64], error) {
	if s.next == s.in.n {
		select {
		case <-s.release:
			return nil, io.EOF
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	out := make([]vertex.Message[int64], min(max, s.in.n-s.next))
	for i := range out {
		k := s.next + i
		out[i] = vertex.Message[int64]{ID: strconv.Itoa(k), Value: 1, Keys: s.in.keys[k%len(s.in.keys)],
			EventTime: s.in.base.Add(time.Duration(k) * time.Microsecond)}
	}
	s.next += len(out)
	return out, nil
}

// heapOpenRunnel runs source -> one-hour fixed-window count -> sink on n
// messages over keys keys and returns the live heap grown since the input
// was made, read once the reduce has acknowledged every message with all
// keys windows open. It checks the windows' results after the source is
// released.
func heapOpenRunnel(b *testing.B, n, keys int) int64 {
	b.Helper()
	src := &heldSource{in: newScaleInput(n, keys), release: make(chan struct{})}
	base := liveHeap()
	p := pipeline.New("bench-open-windows")
	gen := pipeline.Source(p, "gen", vertex.Source[int64](src))
	counts, _ := pipeline.Reduce(p, "count", gen, vertex.Fixed(time.Hour), vertex.Counting[int64]())
	var total, results atomic.Int64
	pipeline.Sink(p, "sink", counts, vertex.Func(func(_ context.Context, ms []vertex.Message[vertex.Windowed[int64]]) error {
		for _, m := range ms {
			total.Add(m.Value.Value)
		}
		results.Add(int64(len(ms)))
		return nil
	}))
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var s pipeline.VertexStats
		for _, v := range p.Stats() {
			if v.Name == "count" {
				s = v
			}
		}
		if s.Acked == int64(n) && s.OpenWindows == int64(keys) {
			break
		}
		select {
		case err := <-done:
			b.Fatalf("the pipeline ended before its windows were open: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			b.Fatalf("the reduce did not acknowledge %d messages with %d windows open within 5 minutes: %+v", n, keys, s)
		}
		time.Sleep(5 * time.Millisecond)
	}
	heap := int64(liveHeap()) - int64(base)
	close(src.release)
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	if total.Load() != int64(n) || results.Load() != int64(keys) {
		b.Fatalf("results: %d windows counting %d, want %d counting %d", results.Load(), total.Load(), keys, n)
	}
	runtime.KeepAlive(src)
	return heap
}

// heapOpenHandwritten builds the hand-written count's state for the same
// input (two workers by key hash, each with a map per open window, as
// benchHandwrittenCount keeps it) and returns the live heap grown since
// the input was made, read while it is held, with the messages held too,
// as the reduce's buffers hold them.
func heapOpenHandwritten(b *testing.B, n, keys int) int64 {
	b.Helper()
	const workers = 2
	in := newScaleInput(n, keys)
	base := liveHeap()
	type msg struct {
		key string
		at  int64
	}
	msgs := make([]msg, n)
	for k := range msgs {
		msgs[k] = msg{key: in.keys[k%keys][0], at: in.base.Add(time.Duration(k) * time.Microsecond).UnixNano()}
	}
	type win struct {
		start  int64
		counts map[string]int64
	}
	open := make([][]win, workers)
	seed := maphash.MakeSeed()
	window := time.Hour.Nanoseconds()
	for _, m := range msgs {
		w := maphash.String(seed, m.key) % workers
		st := m.at - (m.at-in.base.UnixNano())%window
		if len(open[w]) == 0 || open[w][len(open[w])-1].start != st {
			open[w] = append(open[w], win{start: st, counts: make(map[string]int64)})
		}
		open[w][len(open[w])-1].counts[m.key]++
	}
	heap := int64(liveHeap()) - int64(base)
	var total, results int
	for _, ws := range open {
		for _, o := range ws {
			for _, c := range o.counts {
				total += int(c)
				results++
			}
		}
	}
	if total != n || results != keys {
		b.Fatalf("results: %d windows counting %d, want %d counting %d", results, total, keys, n)
	}
	runtime.KeepAlive(msgs)
	runtime.KeepAlive(in)
	return heap
}
