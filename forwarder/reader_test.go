package forwarder

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/memory"
	"github.com/runnel-dev/runnel/vertex"
)

type msg = vertex.Message[int]

// fixture is a memory topic with items, a manual-commit consumer and a
// reader running its loop; dispatched batches arrive on got.
type fixture struct {
	t       *testing.T
	topic   *isb.Topic[msg]
	r       *reader[int]
	got     chan []inflight[int]
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	loopErr error
}

func newFixture(t *testing.T, partitions, batch, maxInFlight int, items []msg, fetch WatermarkFetcher) *fixture {
	t.Helper()
	topic, err := memory.NewTopic[msg]("t", isb.Partitions(partitions))
	if err != nil {
		t.Fatal(err)
	}
	if err := topic.Producer(nil).ProduceBatch(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	c, err := topic.PullConsumer("g", isb.BatchSize(batch), isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, topic: topic, got: make(chan []inflight[int], 1000)}
	f.r = newReader(c, partitions, 0, batch, maxInFlight, &Counters{}, fetch)
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	f.wg.Go(func() {
		f.loopErr = f.r.loop(ctx, func(b []inflight[int]) bool { f.got <- b; return true })
	})
	t.Cleanup(f.stop)
	return f
}

func (f *fixture) stop() {
	f.cancel()
	f.wg.Wait()
	_ = f.topic.Close()
}

// take returns the next n dispatched messages.
func (f *fixture) take(n int) []inflight[int] {
	f.t.Helper()
	var out []inflight[int]
	for len(out) < n {
		select {
		case b := <-f.got:
			out = append(out, b...)
		case <-time.After(10 * time.Second):
			f.t.Fatalf("got %d messages, want %d", len(out), n)
		}
	}
	if len(out) != n {
		f.t.Fatalf("got %d messages, want exactly %d", len(out), n)
	}
	return out
}

// waitPending waits until the group's pending count is want.
func (f *fixture) waitPending(want int64) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f.topic.Pending("g") != want {
		if time.Now().After(deadline) {
			f.t.Fatalf("pending %d, want %d", f.topic.Pending("g"), want)
		}
		time.Sleep(time.Millisecond)
	}
}

func values(n int) []msg {
	out := make([]msg, n)
	for i := range out {
		out[i] = msg{ID: strconv.Itoa(i), Value: i}
	}
	return out
}

// Acks out of order commit only up to the lowest message still in flight.
// The reader commits before every wait; an ack interrupts a wait only when
// its partition has nothing left in flight.
func TestReaderCommitsUpToLowestInFlight(t *testing.T) {
	f := newFixture(t, 1, 5, 10, values(20), nil)
	got := f.take(10)
	for i, it := range got {
		if it.offset != int64(i) || it.msg.Value != i {
			t.Fatalf("message %d: offset %d value %d", i, it.offset, it.msg.Value)
		}
	}
	f.r.ack(got[5:])
	// The freed permits let the reader pull again; it committed first,
	// and offset 0 is still in flight: nothing is committed.
	got = append(got, f.take(5)...)
	if p := f.topic.Pending("g"); p != 20 {
		t.Fatalf("pending %d with offset 0 in flight, want 20", p)
	}
	f.r.ack(got[:3])
	f.r.ack(got[10:15])
	got = append(got, f.take(5)...)
	if p := f.topic.Pending("g"); p != 17 {
		t.Fatalf("pending %d with offset 3 the lowest in flight, want 17", p)
	}
	f.r.ack(got[3:5])
	f.r.ack(got[15:])
	f.waitPending(0) // the partition drained: the ack woke the reader
	if n := f.r.tr.Len(); n != 0 {
		t.Fatalf("tracker holds %d after every ack", n)
	}
}

// The reader never holds more than maxInFlight messages: with 10 permits
// and batches of 4 it hands out exactly 8, then 4 more per 4 acked.
func TestReaderBoundsInFlight(t *testing.T) {
	f := newFixture(t, 1, 4, 10, values(100), nil)
	first := f.take(8)
	time.Sleep(20 * time.Millisecond) // a wrong reader would hand out more now
	select {
	case b := <-f.got:
		t.Fatalf("a batch of %d beyond the in-flight bound", len(b))
	default:
	}
	f.r.ack(first[:4])
	f.take(4)
	time.Sleep(20 * time.Millisecond)
	if len(f.got) != 0 {
		t.Fatalf("more than 4 messages after 4 acks")
	}
	if s := f.r.counters.Snapshot(); s.InFlight != 8 || s.PeakInFlight != 8 || s.Read != 12 || s.Acked != 4 {
		t.Fatalf("counters %+v, want in flight 8, peak 8, read 12, acked 4", s)
	}
}

// A nacked message stays tracked, so the commit stays below it.
func TestReaderNackKeepsCommitBelow(t *testing.T) {
	f := newFixture(t, 1, 5, 5, values(5), nil)
	got := f.take(5)
	f.r.nack(got[2:3])
	f.r.ack(got[:2])
	f.r.ack(got[3:])
	f.waitPending(3)
	if lo, ok := f.r.tr.LowestOffset(0); !ok || lo != 2 {
		t.Fatalf("lowest in flight %d %v, want 2", lo, ok)
	}
}

// Control messages are acked and skipped: never dispatched, committed past.
func TestReaderSkipsControlMessages(t *testing.T) {
	items := values(4)
	items[1].Tags = []string{ControlTag}
	f := newFixture(t, 1, 10, 10, items, nil)
	got := f.take(3)
	if got[0].msg.Value != 0 || got[1].msg.Value != 2 || got[2].msg.Value != 3 {
		t.Fatalf("dispatched %v", got)
	}
	f.r.ack(got)
	f.waitPending(0)
}

type fakeFetcher struct {
	mu    sync.Mutex
	calls [][2]int64
}

func (f *fakeFetcher) Fetch(partition int, offset int64) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, [2]int64{int64(partition), offset})
	return time.Unix(1000+offset, 0)
}

// The fetcher is asked once per read batch, at its first offset, and that
// watermark goes to every message of the batch; the replica watermark is
// the lowest in flight, then the newest read once nothing is in flight.
func TestReaderWatermarkHooks(t *testing.T) {
	ff := &fakeFetcher{}
	f := newFixture(t, 1, 2, 4, values(3), ff) // batches [0 1] and [2]
	got := f.take(3)
	for i, want := range []int64{1000, 1000, 1002} {
		if !got[i].msg.Watermark.Equal(time.Unix(want, 0)) {
			t.Fatalf("message %d watermark %v, want %v", i, got[i].msg.Watermark.Unix(), want)
		}
	}
	if len(ff.calls) != 2 || ff.calls[0] != [2]int64{0, 0} || ff.calls[1] != [2]int64{0, 2} {
		t.Fatalf("fetch calls %v, want (0,0) and (0,2)", ff.calls)
	}
	f.r.ack(got[:2])
	if wm := f.r.watermark(); !wm.Equal(time.Unix(1002, 0)) {
		t.Fatalf("watermark with 2 in flight %v, want 1002", wm.Unix())
	}
	f.r.ack(got[2:])
	if wm := f.r.watermark(); !wm.Equal(time.Unix(1002, 0)) {
		t.Fatalf("watermark with nothing in flight %v, want the newest read, 1002", wm.Unix())
	}
}

// An ack that drains its partition commits from the acking goroutine while
// the reader is blocked in Pull (a commit does not wait for the Pull, and
// the reader's wait is not interrupted); the reader then reads on.
func TestReaderAckCommitsWhilePullBlocked(t *testing.T) {
	f := newFixture(t, 1, 5, 10, values(5), nil)
	got := f.take(5)
	f.r.ack(got[:2])
	if p := f.topic.Pending("g"); p != 5 {
		t.Fatalf("pending %d after an ack that leaves offsets 2-4 in flight, want 5", p)
	}
	f.r.ack(got[2:])
	if p := f.topic.Pending("g"); p != 0 {
		t.Fatalf("pending %d when the ack that drained the partition returned, want 0", p)
	}
	if err := f.topic.Producer(nil).Produce(context.Background(), msg{ID: "5", Value: 5}); err != nil {
		t.Fatal(err)
	}
	if next := f.take(1); next[0].offset != 5 || next[0].msg.Value != 5 {
		t.Fatalf("after the commit the reader read offset %d value %d, want 5 and 5", next[0].offset, next[0].msg.Value)
	}
}
