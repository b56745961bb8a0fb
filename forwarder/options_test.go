package forwarder

import (
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
