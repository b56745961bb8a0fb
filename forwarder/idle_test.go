package forwarder

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// idleFetcher answers Fetch with 10s and FetchIdle with 20s, recording
// the FetchIdle calls.
type idleFetcher struct {
	mu    sync.Mutex
	calls map[int]int64 // partition -> last next offset
}

func (f *idleFetcher) Fetch(int, int64) time.Time { return time.Unix(10, 0) }

func (f *idleFetcher) FetchIdle(partition int, next int64) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[partition] = next
	return time.Unix(20, 0)
}

func (f *idleFetcher) called() map[int]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[int]int64, len(f.calls))
	for k, v := range f.calls {
		out[k] = v
	}
	return out
}

// A partition that delivers nothing between two ticks gets a FetchIdle at
// the next offset to read, and the replica's watermark (nothing in
// flight) rises to what it returns; a partition still delivering does not.
func TestReaderIdleLoopFetchesQuietPartitions(t *testing.T) {
	f := &idleFetcher{calls: map[int]int64{}}
	// Three items, all to partition 0 of 2 (round-robin of one producer
	// call puts a batch in one partition).
	fx := newFixture(t, 2, 10, 10, nil, f)
	if err := fx.topic.Producer(isb.BySelector(func(msg, int) int { return 0 })).ProduceBatch(context.Background(), values(3)); err != nil {
		t.Fatal(err)
	}
	fx.r.ack(fx.take(3))
	if wm := fx.r.watermark(); !wm.Equal(time.Unix(10, 0)) {
		t.Fatalf("watermark after reading %v, want 10s", wm)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { fx.r.idleLoop(ctx, f, time.Millisecond, []int{0, 1}) })
	deadline := time.Now().Add(10 * time.Second)
	for len(f.called()) < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	wg.Wait()
	if got := f.called(); got[0] != 3 || got[1] != 0 || len(got) != 2 {
		t.Fatalf("FetchIdle calls (partition -> next) %v, want 0 -> 3 and 1 -> 0", got)
	}
	if wm := fx.r.watermark(); !wm.Equal(time.Unix(20, 0)) {
		t.Fatalf("watermark after idle fetches %v, want 20s", wm)
	}
}

// idleRecorder is an IdlePublisher that writes one control message to
// partition 1 of "next" on its first call and records the watermarks it
// was given.
type idleRecorder struct {
	fakePublisher
	mu      sync.Mutex
	wms     []time.Time
	offset  int64
	wrote   chan struct{}
	failErr error
}

func (r *idleRecorder) Idle(ctx context.Context, wm time.Time, write ControlWriter) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wms = append(r.wms, wm)
	if len(r.wms) == 1 {
		off, err := write(ctx, "next", 1)
		if err != nil {
			return err
		}
		r.offset = off
		close(r.wrote)
	}
	return r.failErr
}

// The writer's idle loop hands the publisher the replica's watermark and a
// control writer; the control message lands tagged in the partition asked
// for, at the offset reported.
func TestWriterIdleLoop(t *testing.T) {
	topic := newTopic(t, "idle", isb.Partitions(2))
	if err := topic.Producer(isb.BySelector(func(msg, int) int { return 1 })).ProduceBatch(context.Background(), values(2)); err != nil {
		t.Fatal(err)
	}
	rec := &idleRecorder{wrote: make(chan struct{})}
	w := NewWriter([]Edge[int]{{To: "next", Topic: topic}}, &Counters{}, rec, func() time.Time { return time.Unix(30, 0) })
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := w.idleLoop(ctx, rec, time.Millisecond); err != nil {
			t.Errorf("idle loop failed: %v", err)
		}
	})
	select {
	case <-rec.wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("the idle hook was never called")
	}
	cancel()
	wg.Wait()
	if rec.offset != 2 || !rec.wms[0].Equal(time.Unix(30, 0)) {
		t.Fatalf("control message at offset %d with watermark %v, want offset 2, 30s", rec.offset, rec.wms[0])
	}
	if got := drain(t, topic)[1]; len(got) != 3 || !got[2].HasTag(ControlTag) {
		t.Fatalf("partition 1 holds %v, want 2 items then the control message", got)
	}

	// A hook error ends the loop, which returns it (it fails the replica).
	failing := &idleRecorder{wrote: make(chan struct{}), failErr: errors.New("boom")}
	if err := w.idleLoop(context.Background(), failing, time.Millisecond); !errors.Is(err, failing.failErr) {
		t.Fatalf("the idle loop returned %v, want the hook's error", err)
	}
}

// idleSourceWM is a SourceWatermarker whose idle partitions advance to 95s.
type idleSourceWM struct {
	mu       sync.Mutex
	idleRead int
}

func (s *idleSourceWM) Observe(int, time.Time) time.Time { return time.Unix(90, 0) }

func (s *idleSourceWM) IdleAdvance(partition int) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idleRead++
	return time.Unix(95, 0), true
}

// emptySource returns one message, then empty batches until the idle hook
// saw the advanced watermark, then io.EOF.
type emptySource struct {
	sent bool
	seen <-chan struct{}
}

func (s *emptySource) Read(ctx context.Context, _ int) ([]msg, error) {
	if !s.sent {
		s.sent = true
		return []msg{{ID: "a", EventTime: time.Unix(100, 0)}}, nil
	}
	select {
	case <-s.seen:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(time.Millisecond):
		return nil, nil // an idle read
	}
}

// wmWatcher is an IdlePublisher closing seen once it is given 95s.
type wmWatcher struct {
	fakePublisher
	once sync.Once
	seen chan struct{}
}

func (w *wmWatcher) Idle(_ context.Context, wm time.Time, _ ControlWriter) error {
	if wm.Equal(time.Unix(95, 0)) {
		w.once.Do(func() { close(w.seen) })
	}
	return nil
}

// A source whose reads find nothing calls IdleAdvance, and the advanced
// watermark is what its writer's idle hook publishes.
func TestRunSourceIdleAdvance(t *testing.T) {
	topic := newTopic(t, "out")
	pub := &wmWatcher{seen: make(chan struct{})}
	wm := &idleSourceWM{}
	cfg := Config{Vertex: "src", Options: Options{BatchSize: 10}, Counters: &Counters{},
		Hooks: Hooks{Publisher: pub, Source: wm, IdleInterval: time.Millisecond}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := RunSource(ctx, ctx, cfg, vertex.Source[int](&emptySource{seen: pub.seen}), []Edge[int]{{To: "out", Topic: topic}}); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("the idle hook never saw the advanced watermark")
	}
	wm.mu.Lock()
	defer wm.mu.Unlock()
	if wm.idleRead == 0 {
		t.Fatal("IdleAdvance never called")
	}
	if len(pub.calls) != 1 || pub.calls[0].wm != 90 {
		t.Fatalf("publishes %v, want one at 90s (the data write)", pub.calls)
	}
}
