package forwarder

import (
	"errors"
	"testing"

	"github.com/runnel-dev/runnel/internal/vconfig"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// Sizes far beyond sense are refused with an error naming the option, not
// taken to Run, where BatchSize(1 << 40) ended the process with "fatal
// error: out of memory" and Concurrency(1 << 30) never returned. The
// bounds themselves are accepted.
func TestNewOptionsUpperBounds(t *testing.T) {
	for _, tc := range []struct {
		option   string
		at, over []vertex.Option
	}{
		{"Replicas", []vertex.Option{vertex.Replicas(vconfig.MaxReplicas)}, []vertex.Option{vertex.Replicas(vconfig.MaxReplicas + 1)}},
		{"Partitions", []vertex.Option{vertex.Partitions(vconfig.MaxPartitions)}, []vertex.Option{vertex.Partitions(vconfig.MaxPartitions + 1)}},
		{"BatchSize", []vertex.Option{vertex.BatchSize(vconfig.MaxBatchSize)}, []vertex.Option{vertex.BatchSize(1 << 40)}},
		{"MaxInFlight", []vertex.Option{vertex.MaxInFlight(vconfig.MaxMaxInFlight)}, []vertex.Option{vertex.MaxInFlight(vconfig.MaxMaxInFlight + 1)}},
		{"Concurrency", []vertex.Option{vertex.Concurrency(vconfig.MaxConcurrency)}, []vertex.Option{vertex.Concurrency(1 << 30)}},
		{"BufferCapacity", []vertex.Option{vertex.BufferCapacity(vconfig.MaxBufferCapacity)}, []vertex.Option{vertex.BufferCapacity(vconfig.MaxBufferCapacity + 1)}},
		{"BufferCapacity", []vertex.Option{vertex.BufferCapacity(vconfig.MaxBufferCapacity)}, []vertex.Option{vertex.BufferCapacity(1 << 50)}},
	} {
		if _, err := NewOptions(tc.at...); err != nil {
			t.Errorf("%s at its bound: %v", tc.option, err)
		}
		_, err := NewOptions(tc.over...)
		var oe *isb.OptionError
		if !errors.As(err, &oe) || oe.Option != tc.option || !errors.Is(err, isb.ErrInvalidOption) {
			t.Errorf("%s over its bound: %v, want an *isb.OptionError naming it", tc.option, err)
		}
	}
	// The default MaxInFlight of the largest batch is inside its bound.
	if _, err := NewOptions(vertex.BatchSize(vconfig.MaxBatchSize)); err != nil {
		t.Errorf("BatchSize(%d) with the default MaxInFlight: %v", vconfig.MaxBatchSize, err)
	}
}
