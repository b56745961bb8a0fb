package forwarder

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// A batch-map function that fails transiently and then, on the retry,
// returns the wrong number of results has a programming error: the replica
// fails with ErrResultCount at once. It is neither retried again nor, under
// DropMessage, taken for exhausted retries that drop the whole batch.
func TestRunBatchMapWrongCountAfterRetryFails(t *testing.T) {
	in, out := newTopic(t, "in"), newTopic(t, "out")
	if _, err := in.Producer(nil).ProduceTo(context.Background(), 0, values(3)); err != nil {
		t.Fatal(err)
	}
	c, err := in.PullConsumer("map", isb.BatchSize(3), isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	calls := 0
	fn := vertex.BatchMapFunc[int, int](func(_ context.Context, msgs []msg) ([][]msg, error) {
		calls++
		if calls == 1 {
			return nil, errors.New("transient")
		}
		return make([][]msg, len(msgs)-1), nil
	})
	cnt := &Counters{}
	opts, err := NewOptions(vertex.BatchSize(3), vertex.Concurrency(1),
		vertex.Retry(vertex.RetryPolicy{MaxAttempts: 4, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, OnExhausted: vertex.DropMessage}))
	if err != nil {
		t.Fatal(err)
	}
	// The failure stops the replica by itself; the timeout only keeps
	// a regression (the batch dropped, nothing failing) from hanging the test.
	hard, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	cfg := Config{Vertex: "m", Options: opts, Counters: cnt}
	err = RunBatchMap(hard, hard, cfg, Input[int]{Consumer: c, Partitions: 1}, []Edge[int]{{To: "out", Topic: out}}, fn)
	var pe *vertex.ProcessError
	if !errors.Is(err, vertex.ErrResultCount) || !errors.As(err, &pe) || pe.Vertex != "m" {
		t.Fatalf("RunBatchMap = %v; want a *vertex.ProcessError of vertex m wrapping ErrResultCount", err)
	}
	if s := cnt.Snapshot(); calls != 2 || s.Retried != 1 || s.Dropped != 0 || s.Acked != 0 || s.Written != 0 {
		t.Errorf("calls %d, retried %d, dropped %d, acked %d, written %d; want 2, 1, 0, 0, 0",
			calls, s.Retried, s.Dropped, s.Acked, s.Written)
	}
	if p := in.Pending("map"); p != 3 {
		t.Errorf("pending %d after the failure; want 3 (nothing committed)", p)
	}
}
