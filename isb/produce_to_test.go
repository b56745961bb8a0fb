package isb_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
)

// TestProduceToReportsOffsets checks that ProduceTo stores a batch in the
// given partition only and returns the offset of its last item, also when
// another producer appended to the partition in between.
func TestProduceToReportsOffsets(t *testing.T) {
	ctx := context.Background()
	tp, err := isb.NewTopic[int]("nums", isbtest.NewSliceBackend[int](), isb.Partitions(3), isb.Capacity(100))
	if err != nil {
		t.Fatal(err)
	}
	pr := tp.Producer(nil)
	last, err := pr.ProduceTo(ctx, 1, []int{10, 11, 12})
	if err != nil || last != 2 {
		t.Fatalf("ProduceTo = %d, %v, want 2, nil", last, err)
	}
	other := tp.Producer(nil)
	if _, err := other.ProduceTo(ctx, 1, []int{13}); err != nil {
		t.Fatal(err)
	}
	if last, err = pr.ProduceTo(ctx, 1, []int{14, 15}); err != nil || last != 5 {
		t.Fatalf("second ProduceTo = %d, %v, want 5, nil", last, err)
	}
	if last, err = pr.ProduceTo(ctx, 1, nil); err != nil || last != -1 {
		t.Fatalf("empty ProduceTo = %d, %v, want -1, nil", last, err)
	}
	c, err := tp.PullConsumer("g")
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Pull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b.Partition != 1 || b.Offset != 0 || !slices.Equal(b.Items, []int{10, 11, 12, 13, 14, 15}) {
		t.Fatalf("pulled partition %d offset %d items %v, want partition 1 offset 0 items [10..15]", b.Partition, b.Offset, b.Items)
	}
	if u := tp.Used(); u != 6 {
		t.Fatalf("Used() = %d, want 6", u)
	}
}

// TestProduceToConcurrentOffsetsDisjoint has writers append to one
// partition at once: the offset ranges they are told never overlap and
// cover the partition exactly.
func TestProduceToConcurrentOffsetsDisjoint(t *testing.T) {
	ctx := context.Background()
	tp, err := isb.NewTopic[int]("nums", isbtest.NewSliceBackend[int](), isb.Partitions(2), isb.Capacity(10_000))
	if err != nil {
		t.Fatal(err)
	}
	const writers, batches, size = 4, 50, 3
	var (
		mu   sync.Mutex
		seen = make(map[int64]int)
		wg   sync.WaitGroup
	)
	for w := range writers {
		wg.Go(func() {
			pr := tp.Producer(nil)
			for i := range batches {
				v := w*1000 + i
				last, err := pr.ProduceTo(ctx, 0, []int{v, v, v})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for o := last - size + 1; o <= last; o++ {
					seen[o]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != writers*batches*size {
		t.Fatalf("%d distinct offsets, want %d", len(seen), writers*batches*size)
	}
	for o := range int64(writers * batches * size) {
		if seen[o] != 1 {
			t.Fatalf("offset %d reported %d times, want 1", o, seen[o])
		}
	}
}

// TestProduceToCapacity checks admission: FullFail rejects a batch that
// does not fit, TryProduceTo reports false, FullWait splits a batch larger
// than the capacity and a bad partition is ErrInvalidKey.
func TestProduceToCapacity(t *testing.T) {
	ctx := context.Background()
	failTopic, err := isb.NewTopic[int]("fail", isbtest.NewSliceBackend[int](), isb.Capacity(3), isb.WithFullMode(isb.FullFail))
	if err != nil {
		t.Fatal(err)
	}
	pr := failTopic.Producer(nil)
	if _, err := pr.ProduceTo(ctx, 0, []int{1, 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := pr.ProduceTo(ctx, 0, []int{3, 4}); !errors.Is(err, isb.ErrFull) {
		t.Fatalf("ProduceTo over capacity: %v, want ErrFull", err)
	}
	if last, ok, err := pr.TryProduceTo(ctx, 0, []int{3, 4}); ok || err != nil || last != -1 {
		t.Fatalf("TryProduceTo over capacity = %d, %v, %v, want -1, false, nil", last, ok, err)
	}
	if last, ok, err := pr.TryProduceTo(ctx, 0, []int{3}); !ok || err != nil || last != 2 {
		t.Fatalf("TryProduceTo = %d, %v, %v, want 2, true, nil", last, ok, err)
	}
	if _, err := pr.ProduceTo(ctx, 1, []int{1}); !errors.Is(err, isb.ErrInvalidKey) {
		t.Fatalf("ProduceTo to partition 1 of 1: %v, want ErrInvalidKey", err)
	}

	waitTopic, err := isb.NewTopic[int]("wait", isbtest.NewSliceBackend[int](), isb.Capacity(2))
	if err != nil {
		t.Fatal(err)
	}
	c, err := waitTopic.PullConsumer("g", isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var got []int
	go func() {
		defer close(done)
		for len(got) < 5 {
			b, err := c.Pull(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			got = append(got, b.Items...)
			if err := c.CommitTo(b.Partition, b.End()); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	last, err := waitTopic.Producer(nil).ProduceTo(ctx, 0, []int{1, 2, 3, 4, 5})
	<-done
	if err != nil || last != 4 {
		t.Fatalf("FullWait ProduceTo of 5 at capacity 2 = %d, %v, want 4, nil", last, err)
	}
	if !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("consumed %v, want [1 2 3 4 5]", got)
	}
	if err := waitTopic.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := waitTopic.Producer(nil).ProduceTo(ctx, 0, []int{1}); !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("ProduceTo after Close: %v, want ErrClosed", err)
	}
}

// ProduceBatchLast routes per item and reports, per partition, the offset
// of the last item it stored there (-1 where none went), exact also when
// another producer appended in between; a slice of the wrong length is an
// *OptionError and stores nothing.
func TestProduceBatchLast(t *testing.T) {
	ctx := context.Background()
	tp, err := isb.NewTopic[int]("nums", isbtest.NewSliceBackend[int](), isb.Partitions(3))
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	byValue := tp.Producer(isb.BySelector(func(i, n int) int { return i % n }))
	last := make([]int64, 3)
	if err := byValue.ProduceBatchLast(ctx, []int{0, 3, 1, 6}, last); err != nil {
		t.Fatal(err)
	}
	if want := []int64{2, 0, -1}; !slices.Equal(last, want) {
		t.Fatalf("last = %v, want %v", last, want)
	}
	if err := tp.Producer(nil).ProduceBatch(ctx, []int{9, 9, 9}); err != nil { // one more item per partition
		t.Fatal(err)
	}
	if err := byValue.ProduceBatchLast(ctx, []int{2, 5}, last); err != nil {
		t.Fatal(err)
	}
	if want := []int64{-1, -1, 2}; !slices.Equal(last, want) {
		t.Fatalf("last after another producer appended = %v, want %v", last, want)
	}
	var oe *isb.OptionError
	if err := byValue.ProduceBatchLast(ctx, []int{1}, make([]int64, 2)); !errors.As(err, &oe) || !errors.Is(err, isb.ErrInvalidOption) {
		t.Fatalf("2 offsets for 3 partitions: %v, want an *OptionError", err)
	}
	if n := tp.Pending("new"); n != 9 {
		t.Fatalf("topic holds %d items, want 9 (the refused call stored nothing)", n)
	}
}
