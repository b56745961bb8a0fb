package isb_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/codec"
	"github.com/runnel-dev/runnel/isb/isbtest"
	"github.com/runnel-dev/runnel/isb/memory"
	"github.com/runnel-dev/runnel/isb/mmap"
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
	if err := tp.Retain("w", 0, 4); err != nil {
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
		if err := tp.Retain("w", 0, step.retain); err != nil {
			t.Fatal(err)
		}
		if h := tp.Earliest(0); h != step.head {
			t.Fatalf("head %d after Retain(%d), want %d", h, step.retain, step.head)
		}
	}
	if err := tp.Retain("w", 1, 0); !errors.Is(err, isb.ErrInvalidKey) {
		t.Fatalf("Retain of partition 1 of 1: %v, want ErrInvalidKey", err)
	}
	tp.Close()
	if err := tp.Retain("w", 0, 0); !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("Retain after Close: %v, want ErrClosed", err)
	}
}

// TestRetainHolders: two holders of one partition each keep their own
// hold; storage releases below the lowest of them only, moving one holder's
// hold never drops the other's, and removing both releases up to the
// commit. It runs on the slice backend (exact releases) and on memory and
// mmap storage, which release whole segments: there the head stays at or
// below the lowest hold and passes it once the holds move on.
func TestRetainHolders(t *testing.T) {
	for _, c := range []struct {
		name string
		new  func(t *testing.T) isb.Backend[int]
		seg  int64 // items per segment: the head moves in these steps
	}{
		{"slice", func(*testing.T) isb.Backend[int] { return isbtest.NewSliceBackend[int]() }, 1},
		{"memory", func(t *testing.T) isb.Backend[int] {
			b, err := memory.New[int](memory.SegmentSize(4))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}, 4},
		{"mmap", func(t *testing.T) isb.Backend[int] {
			// Each record of an int is far below a page: segments of one
			// page hold many, so the head moves by whole segments.
			b, err := mmap.New[int](t.TempDir(), mmap.SegmentSize(mmap.MinSegmentSize),
				mmap.MaxRetainedConsumedSegments(0), mmap.WithCodec(codec.JSON[int]()))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}, 0},
	} {
		t.Run(c.name, func(t *testing.T) { testRetainHolders(t, c.new(t), c.seg) })
	}
}

func testRetainHolders(t *testing.T, b isb.Backend[int], seg int64) {
	ctx := context.Background()
	tp, err := isb.NewTopic[int]("nums", b)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	const n = 4000
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	if err := tp.Retain("a", 0, 1000); err != nil {
		t.Fatal(err)
	}
	if err := tp.Retain("b", 0, 2000); err != nil {
		t.Fatal(err)
	}
	pr := tp.Producer(nil)
	if err := pr.ProduceBatch(ctx, items); err != nil {
		t.Fatal(err)
	}
	c, err := tp.PullConsumer("g", isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for read := 0; read < n; {
		b, err := c.Pull(ctx)
		if err != nil {
			t.Fatal(err)
		}
		read += len(b.Items)
	}
	if err := c.CommitTo(0, n); err != nil {
		t.Fatal(err)
	}
	// head reports the head after step, which must lie at or below the
	// lowest hold, and within a segment of it where storage releases
	// exactly (seg > 0).
	check := func(step string, lowest int64) int64 {
		t.Helper()
		h := tp.Earliest(0)
		if h > lowest {
			t.Fatalf("%s: head %d, past the lowest hold %d", step, h, lowest)
		}
		if seg > 0 && h <= lowest-seg {
			t.Fatalf("%s: head %d, want within %d of the lowest hold %d", step, h, seg, lowest)
		}
		return h
	}
	h0 := check("holds a=1000 b=2000", 1000)
	// b moving (either way) leaves a's hold alone.
	for _, off := range []int64{3000, 1500} {
		if err := tp.Retain("b", 0, off); err != nil {
			t.Fatal(err)
		}
		if h := check("b moved", 1000); h != h0 {
			t.Fatalf("b moved to %d: head %d, was %d: a's hold at 1000 is all that counts", off, h, h0)
		}
	}
	// a moving past b: b's hold (1500) is the lowest now.
	if err := tp.Retain("a", 0, 3500); err != nil {
		t.Fatal(err)
	}
	h1 := check("a=3500 b=1500", 1500)
	if seg == 0 && h1 <= h0 {
		t.Fatalf("head %d after the lowest hold moved from 1000 to 1500, was %d: nothing released", h1, h0)
	}
	// b gone: a's hold alone.
	if err := tp.Retain("b", 0, math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	h2 := check("a=3500", 3500)
	if seg == 0 && h2 <= h1 {
		t.Fatalf("head %d after b's hold went, was %d: nothing released", h2, h1)
	}
	// Both gone: released up to the commit, within a segment.
	if err := tp.Retain("a", 0, math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	if h := tp.Earliest(0); h < h2 || h > n {
		t.Fatalf("head %d with no hold and everything committed, want in [%d, %d]", h, h2, n)
	}
}
