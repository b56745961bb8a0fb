package forwarder

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// A fallback sink that answers fewer results than messages fails the
// replica with ErrResultCount instead of acking the messages it did not
// answer for.
func TestRunSinkShortFallbackAnswerFails(t *testing.T) {
	in := newTopic(t, "in")
	if _, err := in.Producer(nil).ProduceTo(context.Background(), 0, values(3)); err != nil {
		t.Fatal(err)
	}
	c, err := in.PullConsumer("sink", isb.BatchSize(3), isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	toFallback := vertex.SinkFunc[int](func(_ context.Context, msgs []msg) ([]vertex.Result, error) {
		res := make([]vertex.Result, len(msgs))
		for i := range res {
			res[i] = vertex.ResultFallback
		}
		return res, nil
	})
	fallbackCalls := 0
	short := vertex.SinkFunc[int](func(_ context.Context, msgs []msg) ([]vertex.Result, error) {
		fallbackCalls++
		return make([]vertex.Result, len(msgs)-1), nil
	})
	cnt := &Counters{}
	opts, err := NewOptions(vertex.BatchSize(3), vertex.Concurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	// The failure stops the replica by itself; the timeout only keeps
	// a regression (messages acked, nothing failing) from hanging the test.
	hard, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	cfg := Config{Vertex: "out", Options: opts, Counters: cnt}
	err = RunSink(hard, hard, cfg, Input[int]{Consumer: c, Partitions: 1}, vertex.Sink[int](toFallback), vertex.Sink[int](short))
	var pe *vertex.ProcessError
	if !errors.Is(err, vertex.ErrResultCount) || !errors.As(err, &pe) || pe.Vertex != "out" {
		t.Fatalf("RunSink = %v; want a *vertex.ProcessError of vertex out wrapping ErrResultCount", err)
	}
	if s := cnt.Snapshot(); s.Acked != 0 || s.Fallback != 0 || fallbackCalls != 1 {
		t.Errorf("acked %d, fallback %d, fallback calls %d; want 0, 0, 1 (no retry of a programming error)", s.Acked, s.Fallback, fallbackCalls)
	}
	if p := in.Pending("sink"); p != 3 {
		t.Errorf("pending %d after the failure; want 3 (nothing committed)", p)
	}
}

// A sink that sends a message to a fallback the vertex does not have,
// saying why (a *vertex.WriteError's cause), fails the replica with
// ErrNoFallback and that cause, both reachable with errors.Is.
func TestRunSinkNoFallbackCarriesCause(t *testing.T) {
	in := newTopic(t, "in")
	if _, err := in.Producer(nil).ProduceTo(context.Background(), 0, values(2)); err != nil {
		t.Fatal(err)
	}
	c, err := in.PullConsumer("sink", isb.BatchSize(2), isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rejected := errors.New("status 400: bad record")
	refuse := vertex.SinkFunc[int](func(_ context.Context, msgs []msg) ([]vertex.Result, error) {
		res := make([]vertex.Result, len(msgs))
		causes := make([]error, len(msgs))
		for i := range res {
			res[i], causes[i] = vertex.ResultFallback, rejected
		}
		return res, &vertex.WriteError{Causes: causes}
	})
	opts, err := NewOptions(vertex.BatchSize(2), vertex.Concurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	hard, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	cfg := Config{Vertex: "out", Options: opts, Counters: &Counters{}}
	err = RunSink(hard, hard, cfg, Input[int]{Consumer: c, Partitions: 1}, vertex.Sink[int](refuse), nil)
	if !errors.Is(err, ErrNoFallback) || !errors.Is(err, rejected) {
		t.Fatalf("RunSink = %v; want ErrNoFallback with the sink's cause", err)
	}
}
