package forwarder

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/vconfig"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

func TestNewOptionsDefaultsAndErrors(t *testing.T) {
	c, err := NewOptions(vertex.Replicas(3))
	if err != nil {
		t.Fatal(err)
	}
	if c.Partitions != 3 || c.BatchSize != vconfig.DefaultBatchSize || c.MaxInFlight != 4*vconfig.DefaultBatchSize ||
		c.Concurrency != vconfig.DefaultConcurrency || c.Retry != defaultRetry || c.BufferCapacity != vconfig.DefaultBufferCapacity {
		t.Fatalf("defaults %+v", c)
	}
	bad := map[string][]vertex.Option{
		"Replicas":          {vertex.Replicas(0)},
		"Partitions":        {vertex.Replicas(2), vertex.Partitions(1)},
		"BatchSize":         {vertex.BatchSize(0)},
		"MaxInFlight":       {vertex.BatchSize(10), vertex.MaxInFlight(9)},
		"Concurrency":       {vertex.Concurrency(-1)},
		"BufferCapacity":    {vertex.BufferCapacity(-5)},
		"Retry.MaxAttempts": {vertex.Retry(vertex.RetryPolicy{MaxAttempts: -1})},
		"Retry.MaxBackoff":  {vertex.Retry(vertex.RetryPolicy{InitialBackoff: time.Second, MaxBackoff: time.Millisecond})},
		"Retry.OnExhausted": {vertex.Retry(vertex.RetryPolicy{OnExhausted: vertex.Exhausted(7)})},
	}
	for option, opts := range bad {
		_, err := NewOptions(opts...)
		var oe *isb.OptionError
		if !errors.As(err, &oe) || oe.Option != option || !errors.Is(err, isb.ErrInvalidOption) {
			t.Errorf("%s: %v, want an *isb.OptionError naming it", option, err)
		}
	}
}

// defaulting is a sink that asks for bigger batches (vertex.OptionsDefaulter).
type defaulting struct{ opts []vertex.Option }

func (defaulting) Write(context.Context, []vertex.Message[int]) ([]vertex.Result, error) {
	return nil, nil
}

func (d defaulting) DefaultOptions() []vertex.Option { return d.opts }

// A vertex.OptionsDefaulter's options apply first: a default derived from
// them (MaxInFlight) follows them, an option of the vertex wins, and a
// nil one among them is reported as the defaulter's.
func TestNewVertexOptionsOptionsDefaulter(t *testing.T) {
	fn := defaulting{opts: []vertex.Option{vertex.BatchSize(2000)}}
	c, err := NewVertexOptions(fn)
	if err != nil {
		t.Fatal(err)
	}
	if c.BatchSize != 2000 || c.MaxInFlight != 8000 || c.Concurrency != vconfig.DefaultConcurrency {
		t.Errorf("defaulted: BatchSize %d, MaxInFlight %d, Concurrency %d; want 2000, 8000, %d",
			c.BatchSize, c.MaxInFlight, c.Concurrency, vconfig.DefaultConcurrency)
	}
	if c, err = NewVertexOptions(fn, vertex.BatchSize(100)); err != nil || c.BatchSize != 100 || c.MaxInFlight != 400 {
		t.Errorf("the vertex's BatchSize(100): BatchSize %d, MaxInFlight %d, %v; want 100, 400", c.BatchSize, c.MaxInFlight, err)
	}
	_, err = NewVertexOptions(defaulting{opts: []vertex.Option{nil}})
	var oe *isb.OptionError
	if !errors.As(err, &oe) || oe.Option != "vertex.OptionsDefaulter" {
		t.Errorf("a nil default option: %v, want an *isb.OptionError naming vertex.OptionsDefaulter", err)
	}
}
