package pipeline

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/runnel-dev/runnel/forwarder"
	"github.com/runnel-dev/runnel/vertex"
)

// recorder implements every watermark hook and records the calls.
type recorder struct {
	mu        sync.Mutex
	fetches   int
	publishes map[string]int // destination vertex -> calls
	observed  int
	badOffset int // publishes without a known offset
}

func (r *recorder) Fetch(int, int64) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fetches++
	return time.Unix(7, 0)
}

func (r *recorder) Publish(to string, _ int, offset int64, _ time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.publishes[to]++
	if offset < 0 {
		r.badOffset++
	}
}

func (r *recorder) Observe(int, time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.observed++
	return time.Unix(5, 0)
}

// withHooks gives every replica its hooks: the readers fetch a watermark
// per read batch, the writers publish per edge, the source observes batches,
// and the messages carry the fetched watermark.
func TestWithHooksWiresEveryReplica(t *testing.T) {
	rec := &recorder{publishes: map[string]int{}}
	var mu sync.Mutex
	replicas := map[string]int{}
	p := New("hooked", withHooks(func(v string, r int) forwarder.Hooks {
		mu.Lock()
		replicas[v]++
		mu.Unlock()
		return forwarder.Hooks{Fetcher: rec, Publisher: rec, Source: rec}
	}))
	src := Source(p, "src", vertex.FromSlice(ints(100)), vertex.BatchSize(10))
	m := Map(p, "id", src, ident, vertex.Replicas(2))
	var wmMu sync.Mutex
	var bad, got int
	Sink(p, "out", m, vertex.Func(func(_ context.Context, msgs []vertex.Message[int]) error {
		wmMu.Lock()
		defer wmMu.Unlock()
		got += len(msgs)
		for _, msg := range msgs {
			if !msg.Watermark.Equal(time.Unix(7, 0)) {
				bad++
			}
		}
		return nil
	}))
	runWithin(t, p, 30*time.Second)
	if replicas["src"] != 1 || replicas["id"] != 2 || replicas["out"] != 1 {
		t.Errorf("hooks asked for %v, want src 1, id 2, out 1", replicas)
	}
	if rec.badOffset != 0 {
		t.Errorf("%d publishes without an offset", rec.badOffset)
	}
	// One fetch per read batch: at least one per reading vertex, at most
	// one per message. The source writes each of its 10 batches in one
	// append (one publish each); how the map's chunks fall varies.
	if rec.fetches < 2 || rec.fetches > 200 || rec.observed != 10 || rec.publishes["id"] != 10 || rec.publishes["out"] == 0 || bad != 0 || got != 100 {
		t.Errorf("fetches %d (want 2 to 200), source batches %d (want 10), publishes %v (want id 10), %d of %d sink messages (want 100) without the fetched watermark",
			rec.fetches, rec.observed, rec.publishes, bad, got)
	}
}

func TestLoggerAndLogSink(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	l := zap.New(core)
	p := New("logged", WithLogger(l))
	src := Source(p, "src", vertex.FromSlice([]string{"x", "y"}))
	Sink(p, "log", src, vertex.Log[string](l))
	runWithin(t, p, 30*time.Second)
	if n := logs.FilterMessage("message").Len(); n != 2 {
		t.Errorf("log sink wrote %d entries, want 2", n)
	}
	if logs.FilterMessage("pipeline starting").Len() != 1 || logs.FilterMessage("pipeline stopped").Len() != 1 {
		t.Errorf("pipeline life not logged: %v", logs.All())
	}
	if e := logs.FilterMessage("message").All(); len(e) == 2 && e[0].ContextMap()["value"] != "x" && e[1].ContextMap()["value"] != "x" {
		t.Errorf("log sink entries %v", e)
	}
}
