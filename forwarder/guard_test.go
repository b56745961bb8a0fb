package forwarder

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// A map function that panics or fails in the middle of a chunk: the
// message that panicked is retried alone and succeeds, the one that always
// fails is dropped by the policy, and the outputs of the others keep their
// order, each exactly once.
func TestRunMapPanicMidChunk(t *testing.T) {
	in, out := newTopic(t, "in"), newTopic(t, "out")
	if _, err := in.Producer(nil).ProduceTo(context.Background(), 0, values(6)); err != nil {
		t.Fatal(err)
	}
	c, err := in.PullConsumer("map", isb.BatchSize(6), isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	panicked := false
	fn := func(_ context.Context, m msg, outs []msg) ([]msg, error) {
		switch {
		case m.Value == 2 && !panicked:
			panicked = true
			outs = append(outs, msg{ID: "partial"}) // appended before the panic: must not survive
			panic("boom")
		case m.Value == 4:
			return append(outs, msg{ID: "partial"}), errors.New("always")
		}
		return append(outs, vertex.Derive(m, m.Value*10)), nil
	}
	cnt := &Counters{}
	opts, err := NewOptions(vertex.BatchSize(6), vertex.Concurrency(1),
		vertex.Retry(vertex.RetryPolicy{MaxAttempts: 2, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, OnExhausted: vertex.DropMessage}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	cfg := Config{Vertex: "m", Options: opts, Counters: cnt}
	done := make(chan error, 1)
	go func() {
		done <- RunMap(ctx, ctx, cfg, Input[int]{Consumer: c, Partitions: 1}, []Edge[int]{{To: "out", Topic: out}}, fn)
	}()
	for cnt.Snapshot().Acked < 6 {
		time.Sleep(time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, m := range drain(t, out)[0] {
		got = append(got, m.Value)
	}
	if want := []int{0, 10, 20, 30, 50}; !slices.Equal(got, want) {
		t.Errorf("outputs %v, want %v", got, want)
	}
	if s := cnt.Snapshot(); s.Retried != 2 || s.Dropped != 1 || s.Written != 5 {
		t.Errorf("retried %d, dropped %d, written %d; want 2, 1, 5", s.Retried, s.Dropped, s.Written)
	}
}
