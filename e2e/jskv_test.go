package e2e

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/watermark"
	"github.com/runnel-dev/runnel/watermark/jskv"
)

// The jskv tests run source -> fixed-window reduce -> sink with the
// watermarks in JetStream KV on an embedded NATS server (issue 20): the
// server restarts, or a bucket is deleted, under the running pipeline.

const (
	ksKeys   = 4
	ksWindow = 100 * time.Millisecond
	ksStep   = time.Millisecond // event time between two messages
	ksBatch  = 20
	ksPace   = 5 * time.Millisecond // between two reads
)

// steadySource emits message i (key k<i mod ksKeys>, event time ksBase + i
// ms, value 1) in order, ksBatch per read, until stop is closed; then it
// is exhausted. Event times only grow, so with MaxDelay 0 nothing is late.
type steadySource struct {
	stop chan struct{}
	mu   sync.Mutex
	n    int64 // messages read so far
}

var ksBase = time.Unix(1_900_000_000, 0).UTC()

func (s *steadySource) Read(ctx context.Context, max int) ([]vertex.Message[ev], error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.stop:
		return nil, io.EOF
	case <-time.After(ksPace):
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	msgs := make([]vertex.Message[ev], min(max, ksBatch))
	for k := range msgs {
		i := s.n + int64(k)
		msgs[k] = vertex.Message[ev]{ID: strconv.FormatInt(i, 10), Keys: []string{"k" + strconv.FormatInt(i%ksKeys, 10)},
			EventTime: ksEventTime(i), Value: ev{1}}
	}
	s.n += int64(len(msgs))
	return msgs, nil
}

func ksEventTime(i int64) time.Time { return ksBase.Add(time.Duration(i) * ksStep) }

func (s *steadySource) read() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// want is the result of every window of the first n messages.
func (s *steadySource) want(n int64) map[wkey][]agg {
	o := oracle{w: vertex.Fixed(ksWindow)}
	msgs := make([]omsg, n)
	for i := range n {
		msgs[i] = omsg{key: "k" + strconv.FormatInt(i%ksKeys, 10), et: ksEventTime(i).UnixNano(), v: 1}
	}
	return o.results(msgs)
}

// windowsPipeline builds the pipeline on store; Run it.
func windowsPipeline(name string, store watermark.Store) (*pipeline.Pipeline, *steadySource, *resultSink[agg], *counter[ev]) {
	src := &steadySource{stop: make(chan struct{})}
	p := pipeline.New(name, pipeline.Watermarks(pipeline.WatermarkConfig{
		Store: store, PartitionIdleThreshold: 20 * time.Millisecond, IdleInterval: 5 * time.Millisecond,
		HeartbeatInterval: 100 * time.Millisecond,
	}))
	in := pipeline.Source(p, "src", vertex.Source[ev](src), vertex.BatchSize(ksBatch))
	res, late := pipeline.Reduce(p, "reduce", in, vertex.Fixed(ksWindow), sumAgg,
		vertex.Replicas(2), vertex.Partitions(2), vertex.BatchSize(16))
	results, lateSink := newResultSink[agg](), newCounter[ev]()
	pipeline.Sink(p, "late", late, lateSink)
	pipeline.Sink(p, "results", res, results.results())
	return p, src, results, lateSink
}

// closed reports whether the sink has the result of the window that holds
// message i (for its key).
func (s *resultSink[T]) closed(i int64) bool {
	start := ksEventTime(i).Truncate(ksWindow)
	k := wkey{start.UnixNano(), start.Add(ksWindow).UnixNano(), "k" + strconv.FormatInt(i%ksKeys, 10)}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got[k]) > 0
}

// eventually waits until cond holds, polling; the bound only turns a hang
// into a failure, nothing is asserted about timing.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in 60s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// jskvStore connects a store to srv, with natstest's reconnect-forever
// options.
func jskvStore(t *testing.T, srv *natstest.Server) (*jskv.Store, jetstream.JetStream) {
	js, err := jetstream.New(srv.Connect())
	if err != nil {
		t.Fatal(err)
	}
	store, err := jskv.New(js)
	if err != nil {
		t.Fatal(err)
	}
	return store, js
}

// TestWindowsCloseAcrossNATSRestarts stops the NATS server under a running
// pipeline twice. While it is down the source goes on reading (no publish
// waits on NATS: 400 more messages are read each time, with the server
// still down); once it is back, the reduce watermark advances past what
// was read during the outage, so those windows close while the pipeline
// runs (the watches were recreated); at the end every window holds
// exactly what the source produced, and nothing was late.
func TestWindowsCloseAcrossNATSRestarts(t *testing.T) {
	srv := natstest.Start(t)
	store, _ := jskvStore(t, srv)
	p, src, results, late := windowsPipeline("jskv-restarts", store)

	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	eventually(t, "first windows closed", func() bool { return results.closed(3 * int64(ksWindow/ksStep)) })

	for outage := range 2 {
		srv.Stop()
		before := src.read()
		eventually(t, "the source reads while NATS is down", func() bool { return src.read() >= before+400 })
		if srv.Running() {
			t.Fatal("the server came back by itself")
		}
		after := src.read()
		if err := srv.Resume(); err != nil {
			t.Fatal(err)
		}
		// The window of the last message read in the outage closes: the
		// watermark went past everything read while NATS was down.
		eventually(t, "windows of the outage closed", func() bool { return results.closed(after - 1) })
		t.Logf("outage %d: read %d -> %d while down", outage, before, after)
	}
	close(src.stop)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the pipeline did not end 60s after its source was exhausted")
	}
	n := src.read()
	results.mu.Lock()
	got := results.got
	results.mu.Unlock()
	compare(t, "results", got, src.want(n))
	if l := late.total(); l != 0 {
		t.Errorf("%d messages late, want 0", l)
	}
	checkDrained(t, p)
}

// TestBucketDeletedFailsRun deletes the bucket of the edge src -> reduce
// under the running pipeline: the reduce replicas' watches cannot go on
// (their changes are gone), and Run fails with a *jskv.WatchError naming
// the bucket, matching jskv.ErrBucketDeleted, instead of going on with
// watermarks that never move.
func TestBucketDeletedFailsRun(t *testing.T) {
	srv := natstest.Start(t)
	store, js := jskvStore(t, srv)
	p, _, results, _ := windowsPipeline("jskv-deleted", store)
	bucket, err := watermark.EdgeBucket("jskv-deleted", "src", "reduce")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	eventually(t, "first windows closed", func() bool { return results.closed(int64(ksWindow / ksStep)) })
	if err := js.DeleteKeyValue(context.Background(), bucket); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not fail in 60s after the bucket was deleted")
	}
	var we *jskv.WatchError
	if !errors.As(err, &we) || we.Bucket != bucket || !errors.Is(err, jskv.ErrBucketDeleted) || !errors.Is(err, jskv.ErrWatchFailed) {
		t.Fatalf("Run = %v; want a *jskv.WatchError for bucket %q matching ErrBucketDeleted", err, bucket)
	}
	t.Logf("Run: %v", err)
}
