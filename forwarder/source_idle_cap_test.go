package forwarder

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/vertex"
)

// minSourceWM is a SourceWatermarker whose watermark is the earliest event
// time of the newest batch (no delay), as a generator with ordered event
// times has.
type minSourceWM struct{}

func (minSourceWM) Observe(_ int, minEventTime time.Time) time.Time { return minEventTime }

// idleWMs is an IdlePublisher recording the watermarks the idle loop hands
// it, without writing control messages.
type idleWMs struct {
	fakePublisher
	mu  sync.Mutex
	wms []int64 // unix seconds
}

func (r *idleWMs) Idle(_ context.Context, wm time.Time, _ ControlWriter) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !wm.IsZero() {
		r.wms = append(r.wms, wm.Unix())
	}
	return nil
}

// since returns the watermarks recorded from index i on, and how many
// there are in all.
func (r *idleWMs) since(i int) ([]int64, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.wms[min(i, len(r.wms)):]), len(r.wms)
}

// A source's idle watermark never passes a batch still in flight. The
// idle loop's control message lands after everything stored so far, but a
// staged write that is retried (JetStream stores the part of a batch that
// failed again, after later writes) lands after the control message: an
// idle WMB there at the newest batch's watermark made every record of the
// retried part late downstream (issue 21: 51 of a batch of 100, at event
// time 2.951 s, read with watermark 3.1 s). So while batches are in flight
// the idle loop is given the watermark of the oldest of them.
func TestRunSourceIdleWatermarkHeldByBatchesInFlight(t *testing.T) {
	const n, base = 100, 1000 // event times base+i s: batch k's earliest is base+10k
	in := numbered(n)
	for i := range in {
		in[i].EventTime = time.Unix(int64(base+i), 0)
	}
	src := &ackRecorder{Source: vertex.FromMessages(in)}
	out, b := stagedTopic(t, "out")
	pub := &idleWMs{}
	cfg := Config{Vertex: "src", Options: Options{BatchSize: 10}, Counters: &Counters{},
		Hooks: Hooks{Publisher: pub, Source: minSourceWM{}, IdleInterval: time.Millisecond}}
	done := make(chan error, 1)
	go func() {
		done <- RunSource(context.Background(), context.Background(), cfg, vertex.Source[int](src), []Edge[int]{{To: "out", Topic: out}})
	}()

	// The flush held: the in-flight bound of batches is staged, the newest
	// stamped with base+70 s; the oldest, batch 0, with base.
	inFlight := int64(sourceStagedBatches * 10)
	waitFor(t, "the in-flight batches to be staged", func() bool { return b.Staged(0) == inFlight })
	_, seen := pub.since(0)
	waitFor(t, "idle ticks with every batch in flight", func() bool { _, k := pub.since(0); return k >= seen+20 })
	wms, seen := pub.since(seen)
	for _, wm := range wms {
		if wm != base {
			t.Fatalf("idle watermarks %v with batch 0 (stamped %d s) in flight, want %d", wms, base, base)
		}
	}

	// Two batches durable: the oldest in flight is batch 2.
	b.Allow(0, 20)
	waitFor(t, "two batches to be acked", func() bool { return len(src.ackedIDs()) == 20 })
	waitFor(t, "idle ticks after the flush", func() bool { _, k := pub.since(0); return k >= seen+20 })
	_, seen = pub.since(seen) // ticks that may have run before the batches completed
	waitFor(t, "more idle ticks", func() bool { _, k := pub.since(0); return k >= seen+20 })
	wms, _ = pub.since(seen)
	for _, wm := range wms {
		if wm != base+20 {
			t.Fatalf("idle watermarks %v with batch 2 (stamped %d s) the oldest in flight, want %d", wms, base+20, base+20)
		}
	}

	b.Allow(0, math.MaxInt64)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
