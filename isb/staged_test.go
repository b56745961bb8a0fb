package isb_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
)

// pullWithin pulls from c, waiting at most d; a timeout is no items.
func pullWithin(t *testing.T, c *isb.PullConsumer[int], d time.Duration) []int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	b, err := c.Pull(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return slices.Clone(b.Items)
}

// TestStageToPublishesOnWait checks that staged items keep their order,
// stay invisible to consumers until a Wait publishes them, and that one
// publish covers every write staged before it.
func TestStageToPublishesOnWait(t *testing.T) {
	ctx := context.Background()
	b := isbtest.NewStagedBackend[int]()
	tp, err := isb.NewTopic[int]("nums", b, isb.Capacity(10))
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	if !tp.Stages() {
		t.Fatal("Stages() = false on a backend whose writes are deferred (Caps.Deferred)")
	}
	c, err := tp.PullConsumer("g", isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	pr := tp.Producer(nil)
	p1, err := pr.StageTo(ctx, 0, []int{1, 2, 3})
	if err != nil || p1.Last() != 2 {
		t.Fatalf("StageTo = last %d, %v; want 2, nil", p1.Last(), err)
	}
	p2, err := pr.StageTo(ctx, 0, []int{4, 5})
	if err != nil || p2.Last() != 4 {
		t.Fatalf("second StageTo = last %d, %v; want 4, nil", p2.Last(), err)
	}
	if got := b.Staged(0); got != 5 {
		t.Fatalf("staged end = %d, want 5", got)
	}
	if got := pullWithin(t, c, 50*time.Millisecond); got != nil {
		t.Fatalf("a consumer saw %v before any publish", got)
	}
	b.Allow(0, 5)
	if err := p2.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := p1.Wait(); err != nil { // covered by p2's publish
		t.Fatal(err)
	}
	if got := pullWithin(t, c, time.Second); !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("pulled %v, want [1 2 3 4 5]", got)
	}
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestStageToFailedFlush checks that a failed flush fails the Wait of every
// write it did not publish, keeps their items invisible and releases their
// capacity, and that a Wait after Close is ErrClosed.
func TestStageToFailedFlush(t *testing.T) {
	ctx := context.Background()
	b := isbtest.NewStagedBackend[int]()
	tp, err := isb.NewTopic[int]("nums", b, isb.Partitions(2), isb.Capacity(6), isb.WithFullMode(isb.FullFail))
	if err != nil {
		t.Fatal(err)
	}
	pr := tp.Producer(nil)
	ok1, err := pr.StageTo(ctx, 0, []int{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	failed, err := pr.StageTo(ctx, 0, []int{3, 4, 5})
	if err != nil {
		t.Fatal(err)
	}
	b.Allow(0, 2)
	if err := ok1.Wait(); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk gone")
	b.Fail(0, boom)
	if err := failed.Wait(); !errors.Is(err, boom) {
		t.Fatalf("Wait after a failed flush = %v, want %v", err, boom)
	}
	if _, err := pr.StageTo(ctx, 0, []int{6}); !errors.Is(err, boom) {
		t.Fatalf("StageTo after a failed flush = %v, want %v", err, boom)
	}
	c, err := tp.PullConsumers("g", 1, isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	if got := pullWithin(t, c[0], time.Second); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("pulled %v, want only the published [1 2]", got)
	}
	// 2 of 6 units are held by the published items; the 3 of the failed
	// write and the 1 of the refused one are free again.
	b.Allow(1, 100)
	if _, ok, err := pr.TryProduceTo(ctx, 1, []int{7, 8, 9, 10}); err != nil || !ok {
		t.Fatalf("TryProduceTo of the 4 free units = %v, %v; want true", ok, err)
	}
	if _, ok, _ := pr.TryProduceTo(ctx, 1, []int{11}); ok {
		t.Fatal("TryProduceTo past the capacity succeeded")
	}
	if _, err := pr.StageTo(ctx, 1, []int{12}); !errors.Is(err, isb.ErrFull) {
		t.Fatalf("StageTo on a full FullFail topic = %v, want ErrFull", err)
	}
	if err := c[0].Commit(); err != nil {
		t.Fatal(err)
	}
	pending, err := pr.StageTo(ctx, 1, []int{12})
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pending.Wait(); !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("Wait after Close = %v, want ErrClosed", err)
	}
}

// TestStageToWithoutStaging checks that on storage that does not stage
// (memory, the slice backend) StageTo is ProduceTo: the items are visible
// at once and the Pending is done.
func TestStageToWithoutStaging(t *testing.T) {
	ctx := context.Background()
	tp, err := isb.NewTopic[int]("nums", isbtest.NewSliceBackend[int](), isb.Partitions(2))
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	if tp.Stages() {
		t.Fatal("Stages() = true on a backend that does not stage")
	}
	c, err := tp.PullConsumer("g")
	if err != nil {
		t.Fatal(err)
	}
	pr := tp.Producer(nil)
	p, err := pr.StageTo(ctx, 1, []int{1, 2, 3})
	if err != nil || p.Last() != 2 {
		t.Fatalf("StageTo = last %d, %v; want 2, nil", p.Last(), err)
	}
	if got := pullWithin(t, c, time.Second); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("pulled %v before Wait, want [1 2 3]", got)
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := pr.StageTo(ctx, 2, []int{1}); !errors.Is(err, isb.ErrInvalidKey) {
		t.Fatalf("StageTo of partition 2 of 2 = %v, want ErrInvalidKey", err)
	}
}
