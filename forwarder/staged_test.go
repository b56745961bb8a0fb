package forwarder

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
	"github.com/runnel-dev/runnel/isb/memory"
	"github.com/runnel-dev/runnel/vertex"
)

// stagedTopic is a topic on storage that stages writes and publishes them
// only as far as the test allows.
func stagedTopic(t *testing.T, name string) (*isb.Topic[msg], *isbtest.StagedBackend[msg]) {
	t.Helper()
	b := isbtest.NewStagedBackend[msg]()
	tp, err := isb.NewTopic[msg](name, b)
	if err != nil {
		t.Fatal(err)
	}
	// Runs after the test's own cleanups; everything is let through so
	// that Close waits for no publish.
	t.Cleanup(func() {
		b.AllowAll()
		_ = tp.Close()
	})
	return tp, b
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// numbered returns n messages with IDs "0".."n-1" and values 0..n-1.
func numbered(n int) []msg {
	out := make([]msg, n)
	for i := range out {
		out[i] = msg{ID: strconv.Itoa(i), Value: i, EventTime: time.Unix(int64(i), 0)}
	}
	return out
}

func (a *ackRecorder) ackedIDs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.acked)
}

// stagedSource runs a source of n numbered messages in batches of 10 into
// a staged topic; the replica's error arrives on done.
func stagedSource(t *testing.T, n int) (src *ackRecorder, out *isb.Topic[msg], b *isbtest.StagedBackend[msg], pub *fakePublisher, c *Counters, done chan error) {
	src = &ackRecorder{SliceSource: vertex.FromMessages(numbered(n))}
	out, b = stagedTopic(t, "out")
	pub = &fakePublisher{}
	c = &Counters{}
	cfg := Config{Vertex: "src", Options: Options{BatchSize: 10}, Counters: c, Hooks: Hooks{Publisher: pub}}
	done = make(chan error, 1)
	go func() {
		done <- RunSource(context.Background(), context.Background(), cfg, vertex.Source[int](src), []Edge[int]{{To: "out", Topic: out}})
	}()
	return src, out, b, pub, c, done
}

// On storage that stages writes the source keeps several batches in
// flight and still writes, acks and publishes in read order.
func TestRunSourceStagedKeepsOrder(t *testing.T) {
	src, out, b, pub, c, done := stagedSource(t, 1000)
	b.AllowAll()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, end := splitEnd(t, drain(t, out)[0])
	want := ids(numbered(1000))
	if !slices.Equal(ids(got), want) {
		t.Fatalf("wrote %d messages out of order: first %v", len(got), ids(got)[:min(len(got), 20)])
	}
	if end != (endMsg{"src/0", Final}) {
		t.Errorf("end of stream %+v, want src/0 final", end)
	}
	if acked := src.ackedIDs(); !slices.Equal(acked, want) {
		t.Errorf("acked %d messages, not in read order", len(acked))
	}
	// One watermark per batch, at the batch's last offset, in order.
	pub.mu.Lock()
	defer pub.mu.Unlock()
	if len(pub.calls) != 100 {
		t.Fatalf("%d publisher calls, want 100", len(pub.calls))
	}
	for i, call := range pub.calls {
		if call.offset != int64(i*10+9) {
			t.Fatalf("publisher call %d at offset %d, want %d", i, call.offset, i*10+9)
		}
	}
	if s := c.Snapshot(); s.Read != 1000 || s.Written != 1000 || s.Acked != 1000 || s.InFlight != 0 {
		t.Errorf("counters %+v", s)
	}
}

// A batch is acked to its source, and its watermark published, only once
// its outputs are durable: with the flush held, the source reads its
// in-flight bound of batches and acks none; each flush let through acks
// exactly the batches it covers.
func TestRunSourceAcksOnlyDurableBatches(t *testing.T) {
	src, _, b, pub, _, done := stagedSource(t, 100)
	inFlight := int64(sourceStagedBatches * 10)
	waitFor(t, "the in-flight batches to be staged", func() bool { return b.Staged(0) == inFlight })
	time.Sleep(20 * time.Millisecond) // a source that did not wait would go on now
	if got := b.Staged(0); got != inFlight {
		t.Fatalf("staged %d messages with the flush held, want the bound %d", got, inFlight)
	}
	if acked := src.ackedIDs(); len(acked) != 0 {
		t.Fatalf("acked %v before any flush", acked)
	}
	pub.mu.Lock()
	if len(pub.calls) != 0 {
		t.Errorf("published watermarks %v before any flush", pub.calls)
	}
	pub.mu.Unlock()

	b.Allow(0, 20) // two batches durable
	waitFor(t, "two batches to be acked", func() bool { return len(src.ackedIDs()) == 20 })
	waitFor(t, "two more batches to be staged", func() bool { return b.Staged(0) == inFlight+20 })
	time.Sleep(20 * time.Millisecond)
	if acked := src.ackedIDs(); !slices.Equal(acked, ids(numbered(20))) {
		t.Fatalf("acked %v after a flush of 20, want the first 20", acked)
	}
	pub.mu.Lock()
	if n := len(pub.calls); n != 2 || pub.calls[1].offset != 19 {
		t.Errorf("publisher calls %v after a flush of 20, want two, the last at 19", pub.calls)
	}
	pub.mu.Unlock()

	b.Allow(0, math.MaxInt64)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if acked := src.ackedIDs(); !slices.Equal(acked, ids(numbered(100))) {
		t.Fatalf("acked %d at the end, want all 100 in order", len(acked))
	}
}

// A failed flush fails the replica, and nothing after the last durable
// batch is acked: not the batch it failed, nor the ones staged after it.
func TestRunSourceFailedFlushAcksNothingAfter(t *testing.T) {
	src, out, b, _, c, done := stagedSource(t, 100)
	waitFor(t, "the in-flight batches to be staged", func() bool { return b.Staged(0) == sourceStagedBatches*10 })
	b.Allow(0, 20)
	waitFor(t, "two batches to be acked", func() bool { return len(src.ackedIDs()) == 20 })
	boom := errors.New("disk gone")
	b.Fail(0, boom)
	err := <-done
	if !errors.Is(err, boom) {
		t.Fatalf("RunSource = %v, want the flush failure", err)
	}
	if acked := src.ackedIDs(); !slices.Equal(acked, ids(numbered(20))) {
		t.Fatalf("acked %v, want only the 20 durable before the failure", acked)
	}
	if s := c.Snapshot(); s.Acked != 20 || s.InFlight != 0 {
		t.Errorf("counters %+v, want 20 acked, none in flight", s)
	}
	// Readers see what was durable, and no end of stream.
	got, end := splitEnd(t, drain(t, out)[0])
	if !slices.Equal(ids(got), ids(numbered(20))) || end != (endMsg{}) {
		t.Errorf("topic holds %v and end %+v, want the 20 durable and no end", ids(got), end)
	}
}

// A map vertex on storage that stages writes acks (commits) its input only
// once its outputs are durable, and writes them in order per worker.
func TestRunMapStagedCommitsOnlyDurable(t *testing.T) {
	in, out, b, cnt, stop := stagedMap(t, vertex.Concurrency(1))
	committed := func() int64 { return 100 - in.Pending("map") }
	waitFor(t, "outputs to be staged", func() bool { return b.Staged(0) >= 10 })
	time.Sleep(20 * time.Millisecond)
	if s := cnt.Snapshot(); s.Acked != 0 || committed() != 0 {
		t.Fatalf("acked %d, committed %d with the flush held; want 0, 0", s.Acked, committed())
	}
	b.Allow(0, 30)
	waitFor(t, "30 acks", func() bool { return cnt.Snapshot().Acked == 30 })
	time.Sleep(20 * time.Millisecond)
	if s := cnt.Snapshot(); s.Acked != 30 {
		t.Fatalf("acked %d after a flush of 30, want 30", s.Acked)
	}
	b.Allow(0, math.MaxInt64)
	waitFor(t, "every ack", func() bool { return cnt.Snapshot().Acked == 100 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	got := drain(t, out)[0]
	want := ids(numbered(100))
	if !slices.Equal(ids(got), want) {
		t.Fatalf("outputs %v, want 0..99 in order", ids(got))
	}
	if committed() != 100 {
		t.Errorf("committed %d, want 100", committed())
	}
}

// A map replica whose writes are staged cuts a read batch into as few
// chunks as keep its workers busy, each chunk being one write (one flush on
// durable storage): with 4 batches in flight, 4 workers take a batch each,
// one write per batch; with 1 batch in flight, each batch is cut in 4.
func TestRunMapStagedWritesPerBatch(t *testing.T) {
	for _, tc := range []struct {
		name        string
		maxInFlight int
		writes      int
	}{
		{"four batches in flight", 40, 10},
		{"one batch in flight", 10, 40}, // chunks of 3, 3, 3, 1
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, out, b, cnt, stop := stagedMap(t, vertex.Concurrency(4), vertex.MaxInFlight(tc.maxInFlight))
			b.AllowAll()
			waitFor(t, "every ack", func() bool { return cnt.Snapshot().Acked == 100 })
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if got := b.Writes(0); got != tc.writes {
				t.Errorf("%d writes for 10 batches of 10, want %d", got, tc.writes)
			}
			got := ids(drain(t, out)[0])
			slices.SortFunc(got, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
			if !slices.Equal(got, ids(numbered(100))) {
				t.Errorf("outputs %v, want each of 0..99 once", got)
			}
		})
	}
}

// stagedMap runs an identity map replica with opts (and BatchSize 10) from
// a memory topic holding numbered(100) to a staged topic that publishes
// nothing until the test allows it; stop ends the replica and returns its
// error.
func stagedMap(t *testing.T, opts ...vertex.Option) (in, out *isb.Topic[msg], b *isbtest.StagedBackend[msg], cnt *Counters, stop func() error) {
	t.Helper()
	in, err := memory.NewTopic[msg]("in")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	if _, err := in.Producer(nil).ProduceTo(context.Background(), 0, numbered(100)); err != nil {
		t.Fatal(err)
	}
	cons, err := in.PullConsumer("map", isb.BatchSize(10), isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cons.Close() })
	out, b = stagedTopic(t, "out")
	cnt = &Counters{}
	cfg, err := NewOptions(append([]vertex.Option{vertex.BatchSize(10)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunMap(ctx, ctx, Config{Vertex: "m", Options: cfg, Counters: cnt}, Input[int]{Consumer: cons, Partitions: 1},
			[]Edge[int]{{To: "out", Topic: out}}, FromValueFunc(func(_ context.Context, v int) (int, error) { return v, nil }))
	}()
	stop = sync.OnceValue(func() error {
		cancel()
		return <-done
	})
	// A test that failed with the flush held: let it through, or the
	// replica's completers wait for it forever.
	t.Cleanup(func() {
		b.AllowAll()
		_ = stop()
	})
	return in, out, b, cnt, stop
}
