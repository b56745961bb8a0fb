package isb_test

import (
	"errors"
	"testing"

	"github.com/runnel-dev/runnel/isb"
)

// A consumer's BatchSize is bounded: BatchSize(1 << 40) is an error naming
// the option, not a batch allocated at the first Pull.
func TestConsumerBatchSizeBounds(t *testing.T) {
	tp := newTopic[int](t, "bounded")
	for _, n := range []int{0, 100_001, 1 << 40} {
		_, err := tp.PullConsumers("g", 1, isb.BatchSize(n))
		var oe *isb.OptionError
		if !errors.As(err, &oe) || oe.Option != "BatchSize" || !errors.Is(err, isb.ErrInvalidOption) {
			t.Errorf("BatchSize(%d): %v, want an *isb.OptionError naming BatchSize", n, err)
		}
	}
	if _, err := tp.PullConsumers("g", 1, isb.BatchSize(100_000)); err != nil {
		t.Fatalf("BatchSize(100000), the bound: %v", err)
	}
}
