package forwarder

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// failingIdle is a WatermarkPublisher whose idle hook fails.
type failingIdle struct{ err error }

func (failingIdle) Publish(string, int, int64, time.Time) {}

func (f failingIdle) Idle(context.Context, time.Time, ControlWriter) error { return f.err }

// A failure of a loop beside the reader (here the idle publisher's) stops
// the replica, which returns it named by vertex and replica: a replica
// reports its failures by its return value only.
func TestReplicaReturnsALoopFailure(t *testing.T) {
	in, out := newTopic(t, "in"), newTopic(t, "out")
	if err := in.Producer(nil).ProduceBatch(context.Background(), values(5)); err != nil {
		t.Fatal(err)
	}
	c, err := in.PullConsumer("m", isb.BatchSize(10), isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	opts, err := NewOptions(vertex.BatchSize(10))
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	cfg := Config{Vertex: "m", Replica: 1, Options: opts, Counters: &Counters{},
		Hooks: Hooks{Publisher: failingIdle{boom}, IdleInterval: time.Millisecond}}
	// The input never ends: only the failure ends the replica (the timeout
	// keeps a regression from hanging the test).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = RunMap(ctx, ctx, cfg, Input[int]{Consumer: c, Partitions: 1}, []Edge[int]{{To: "out", Topic: out}},
		FromValueFunc(func(_ context.Context, v int) (int, error) { return v, nil }))
	var pe *vertex.ProcessError
	if !errors.Is(err, boom) || !errors.As(err, &pe) || pe.Vertex != "m" || pe.Replica != 1 {
		t.Fatalf("RunMap = %v, want a *vertex.ProcessError of vertex m replica 1 wrapping the idle hook's error", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the replica ended only at the timeout")
	}
}
