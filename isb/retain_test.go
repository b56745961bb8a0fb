package isb_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
)

// TestRetain: a retained offset keeps storage from releasing what every
// group committed at and past it, moving it releases up to the new hold,
// and capacity follows the commits alone.
func TestRetain(t *testing.T) {
	ctx := context.Background()
	tp, err := isb.NewTopic[int]("nums", isbtest.NewSliceBackend[int](), isb.Capacity(10))
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	if err := tp.Retain(0, 4); err != nil {
		t.Fatal(err)
	}
	pr := tp.Producer(nil)
	if err := pr.ProduceBatch(ctx, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}); err != nil {
		t.Fatal(err)
	}
	c, err := tp.PullConsumer("g", isb.ManualCommit(), isb.BatchSize(10))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Pull(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.CommitTo(0, 10); err != nil {
		t.Fatal(err)
	}
	if h := tp.Earliest(0); h != 4 {
		t.Fatalf("head %d after a commit of 10 with offset 4 retained, want 4", h)
	}
	// Capacity is released by the commit: 10 more fit at once.
	if ok, err := pr.TryProduceBatch(ctx, []int{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}); err != nil || !ok {
		t.Fatalf("produce after the commit: %v, %v: the hold took capacity", ok, err)
	}
	for _, step := range []struct{ retain, head int64 }{{8, 8}, {6, 8}, {math.MaxInt64, 10}} {
		if err := tp.Retain(0, step.retain); err != nil {
			t.Fatal(err)
		}
		if h := tp.Earliest(0); h != step.head {
			t.Fatalf("head %d after Retain(%d), want %d", h, step.retain, step.head)
		}
	}
	if err := tp.Retain(1, 0); !errors.Is(err, isb.ErrInvalidKey) {
		t.Fatalf("Retain of partition 1 of 1: %v, want ErrInvalidKey", err)
	}
	tp.Close()
	if err := tp.Retain(0, 0); !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("Retain after Close: %v, want ErrClosed", err)
	}
}
