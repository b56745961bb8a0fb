package isbtest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
)

// reopen closes c and opens the single consumer of its group again.
func reopen(t *testing.T, tp *isb.Topic[Item], c *isb.PullConsumer[Item], opts ...isb.ConsumerOption) *isb.PullConsumer[Item] {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return consumer(t, tp, c.Group(), opts...)
}

// expectBatch pulls one batch and checks where it starts and what it holds.
// Use it only where a storage's short reads cannot split the batch (one
// item, or BatchSize(1)); expectItems otherwise.
func expectBatch(t *testing.T, ctx context.Context, c *isb.PullConsumer[Item], partition int, offset int64, items []Item) {
	t.Helper()
	b := pull(t, ctx, c)
	if b.Partition != partition || !atOffset(t, b.Offset, offset) || !slices.Equal(b.Items, items) {
		t.Fatalf("pulled partition %d offset %d %v; want partition %d offset %d %v",
			b.Partition, b.Offset, b.Items, partition, offset, items)
	}
}

// expectItems pulls until it has len(items) items, all of partition and
// contiguous from offset, checks them, and returns the last batch. Storage
// may return fewer items than BatchSize (at a segment boundary), so the
// items may come in several batches.
func expectItems(t *testing.T, ctx context.Context, c *isb.PullConsumer[Item], partition int, offset int64, items []Item) isb.Batch[Item] {
	t.Helper()
	var got []Item
	var b isb.Batch[Item]
	for next := offset; len(got) < len(items); next = b.End() {
		b = pull(t, ctx, c)
		if b.Partition != partition || !atOffset(t, b.Offset, next) {
			t.Fatalf("pulled partition %d offset %d %v; want partition %d offset %d", b.Partition, b.Offset, b.Items, partition, next)
		}
		got = append(got, b.Items...)
	}
	if !slices.Equal(got, items) {
		t.Fatalf("pulled %v from partition %d offset %d; want %v", got, partition, offset, items)
	}
	return b
}

// cancelledPull pulls with a ctx that is already cancelled, or that ends
// while the pull waits, and checks that it delivers nothing.
func cancelledPull(t *testing.T, ctx context.Context, c *isb.PullConsumer[Item], already bool) {
	t.Helper()
	pctx, cancel := context.WithTimeout(ctx, quiet)
	if already {
		cancel()
	}
	defer cancel()
	b, err := c.Pull(pctx)
	if err == nil || !errors.Is(err, pctx.Err()) {
		t.Fatalf("cancelled Pull = %v, %v; want the ctx error", b, err)
	}
}

// commitAfterEmptyPull: Commit after an empty or a cancelled pull commits
// nothing that was not delivered (BufferQueue's memory mode skipped items
// here).
func (s suite) commitAfterEmptyPull(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts []isb.ConsumerOption
	}{
		{"manual", []isb.ConsumerOption{isb.ManualCommit(), isb.BatchSize(10)}},
		{"auto", []isb.ConsumerOption{isb.BatchSize(10)}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := testContext(t)
			tp := s.topic(t)
			pr := tp.Producer(nil)
			c := consumer(t, tp, "g", mode.opts...)
			produce(t, ctx, pr, seqs(0, 0, 3)...)
			expectItems(t, ctx, c, 0, 0, seqs(0, 0, 3))
			cancelledPull(t, ctx, c, false) // waits, then the deadline: empty
			if err := c.Commit(); err != nil {
				t.Fatalf("Commit after an empty pull: %v", err)
			}
			produce(t, ctx, pr, seqs(0, 3, 2)...)
			cancelledPull(t, ctx, c, true) // cancelled before it starts
			if err := c.Commit(); err != nil {
				t.Fatalf("Commit after a cancelled pull: %v", err)
			}
			if err := c.Commit(); err != nil {
				t.Fatalf("second Commit: %v", err)
			}
			// The two undelivered items were not skipped: the group resumes
			// right after the first batch.
			c = reopen(t, tp, c, mode.opts...)
			expectItems(t, ctx, c, 0, 3, seqs(0, 3, 2))
			if n := tp.Pending("g"); n != 2 {
				t.Fatalf("Pending = %d, want 2", n)
			}
		})
	}
}

// commitToErrors: CommitTo refuses partitions the consumer does not own and
// offsets past what it was delivered; at or below the commit it is a no-op.
func (s suite) commitToErrors(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t, isb.Partitions(2))
	pr := tp.Producer(toPartition)
	cs, err := tp.PullConsumers("g", 2, isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	c0, c1 := cs[0], cs[1]
	t.Cleanup(func() { c0.Close(); c1.Close() })
	if err := c0.CommitTo(1, 0); !errors.Is(err, isb.ErrNotAssigned) {
		t.Fatalf("CommitTo a partition of another consumer = %v, want ErrNotAssigned", err)
	}
	if err := c0.CommitTo(7, 0); !errors.Is(err, isb.ErrNotAssigned) {
		t.Fatalf("CommitTo partition 7 of 2 = %v, want ErrNotAssigned", err)
	}
	if err := c0.CommitTo(0, 1); !errors.Is(err, isb.ErrCommitBeyondDelivered) {
		t.Fatalf("CommitTo before any delivery = %v, want ErrCommitBeyondDelivered", err)
	}
	produce(t, ctx, pr, Item{Producer: 0, Seq: 0}, Item{Producer: 0, Seq: 1}, Item{Producer: 0, Seq: 2})
	produce(t, ctx, pr, Item{Producer: 1, Seq: 0})
	if err := c0.CommitTo(0, 1); !errors.Is(err, isb.ErrCommitBeyondDelivered) {
		t.Fatalf("CommitTo of stored but undelivered items = %v, want ErrCommitBeyondDelivered", err)
	}
	expectItems(t, ctx, c0, 0, 0, seqs(0, 0, 3))
	if err := c0.CommitTo(0, 4); !errors.Is(err, isb.ErrCommitBeyondDelivered) {
		t.Fatalf("CommitTo(0, 4) after delivering 3 = %v, want ErrCommitBeyondDelivered", err)
	}
	for _, off := range []int64{0, 2, 2, 1, -5} { // up to 2, then no-ops
		if err := c0.CommitTo(0, off); err != nil {
			t.Fatalf("CommitTo(0, %d): %v", off, err)
		}
	}
	if n := tp.Pending("g"); n != 2 { // offset 2 of partition 0, offset 0 of partition 1
		t.Fatalf("Pending = %d, want 2", n)
	}
	c0.Close()
	if err := c0.CommitTo(0, 3); !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("CommitTo on a closed consumer = %v, want ErrClosed", err)
	}
	if err := c0.Commit(); !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("Commit on a closed consumer = %v, want ErrClosed", err)
	}
	c1.Close()
	// The commit never moved back: the group resumes at offset 2.
	c := consumer(t, tp, "g", isb.ManualCommit())
	got := []isb.Batch[Item]{pull(t, ctx, c), pull(t, ctx, c)}
	slices.SortFunc(got, func(a, b isb.Batch[Item]) int { return a.Partition - b.Partition })
	if got[0].Offset != 2 || !slices.Equal(got[0].Items, seqs(0, 2, 1)) || got[1].Offset != 0 || len(got[1].Items) != 1 {
		t.Fatalf("resumed with %+v, want partition 0 from offset 2 and partition 1 from 0", got)
	}
}

// autoCommitResume: under auto commit a batch is committed by the next
// Pull, so a group reopened after closing resumes with the last batch.
func (s suite) autoCommitResume(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t)
	items := seqs(0, 0, 5)
	produce(t, ctx, tp.Producer(nil), items...)
	c := consumer(t, tp, "g", isb.BatchSize(2))
	b1 := pull(t, ctx, c)
	b2 := pull(t, ctx, c) // commits b1
	if b1.Offset != 0 || b2.Offset != b1.End() {
		t.Fatalf("batches at offsets %d and %d, want 0 and %d", b1.Offset, b2.Offset, b1.End())
	}
	c = reopen(t, tp, c, isb.BatchSize(2))
	expectItems(t, ctx, c, 0, b2.Offset, items[b2.Offset:])
	expectEmpty(t, c) // commits the last batch
	if n := tp.Pending("g"); n != 0 {
		t.Fatalf("Pending = %d, want 0", n)
	}
}

// manualCommitResume: under manual commit nothing is committed by pulling;
// Commit commits the last batch.
func (s suite) manualCommitResume(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t)
	items := seqs(0, 0, 5)
	produce(t, ctx, tp.Producer(nil), items...)
	opts := []isb.ConsumerOption{isb.BatchSize(2), isb.ManualCommit()}
	c := consumer(t, tp, "g", opts...)
	pull(t, ctx, c)
	pull(t, ctx, c)
	c = reopen(t, tp, c, opts...)
	b1 := pull(t, ctx, c)
	b2 := pull(t, ctx, c)
	if b1.Offset != 0 || b2.Offset != b1.End() {
		t.Fatalf("after reopening without a commit: batches at offsets %d and %d, want 0 and %d", b1.Offset, b2.Offset, b1.End())
	}
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := tp.Pending("g"); n != 5-b2.End() {
		t.Fatalf("Pending = %d, want %d", n, 5-b2.End())
	}
	c = reopen(t, tp, c, opts...)
	expectItems(t, ctx, c, 0, b2.End(), items[b2.End():])
}

// lateGroup: a group created when nothing was consumed yet starts at the
// first item; one created after another committed starts at the earliest
// retained item (not at the other group's commit: storage that releases
// whole segments still retains items below it), and holds capacity for
// everything it has not committed.
func (s suite) lateGroup(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t, isb.Capacity(100))
	pr := tp.Producer(nil)
	produce(t, ctx, pr, seqs(0, 0, 10)...)
	if n := tp.Pending("a"); n != 10 {
		t.Fatalf("Pending of a group not created yet = %d, want 10 (nothing released without groups)", n)
	}
	a := consumer(t, tp, "a", isb.BatchSize(10), isb.ManualCommit())
	expectItems(t, ctx, a, 0, 0, seqs(0, 0, 10))
	if err := a.CommitTo(0, 6); err != nil {
		t.Fatal(err)
	}
	if u := tp.Used(); u != 4 {
		t.Fatalf("Used() = %d, want 4", u)
	}
	// The earliest retained item: 6 where storage frees items as they are
	// committed, 0 where it frees whole segments.
	pending := tp.Pending("b")
	head := 10 - pending
	if head < 0 || head > 6 || head != tp.Earliest(0) {
		t.Fatalf("Pending(b) = %d before b exists: it would start at %d; the earliest retained item is %d (and at most 6)", pending, head, tp.Earliest(0))
	}
	b := consumer(t, tp, "b", isb.BatchSize(10))
	if u, n := tp.Used(), tp.Pending("b"); u != pending || n != pending {
		t.Fatalf("after b joined: Used() = %d, Pending(b) = %d; want both %d (b holds what it has not committed)", u, n, pending)
	}
	expectItems(t, ctx, b, 0, head, seqs(0, int(head), int(pending)))
	produce(t, ctx, pr, seqs(0, 10, 1)...)
	expectBatch(t, ctx, b, 0, 10, seqs(0, 10, 1))
	// b committed everything; a still holds 6..10.
	expectEmpty(t, b)
	if u := tp.Used(); u != 5 {
		t.Fatalf("Used() = %d, want 5 (held by group a)", u)
	}
}

// consumerSplit: a group's consumers get contiguous partition ranges, the
// extra partitions going to the first consumers.
func (s suite) consumerSplit(t *testing.T) {
	tp := s.topic(t, isb.Partitions(5))
	for _, c := range []struct {
		n    int
		want [][]int
	}{
		{1, [][]int{{0, 1, 2, 3, 4}}},
		{2, [][]int{{0, 1, 2}, {3, 4}}},
		{3, [][]int{{0, 1}, {2, 3}, {4}}},
		{5, [][]int{{0}, {1}, {2}, {3}, {4}}},
	} {
		cs, err := tp.PullConsumers("split", c.n)
		if err != nil {
			t.Fatalf("PullConsumers(%d): %v", c.n, err)
		}
		for i, pc := range cs {
			if got := pc.Assigned(); !slices.Equal(got, c.want[i]) {
				t.Errorf("%d consumers: consumer %d owns %v, want %v", c.n, i, got, c.want[i])
			}
			if pc.Group() != "split" {
				t.Errorf("Group() = %q", pc.Group())
			}
			pc.Close()
		}
		if len(cs) != c.n {
			t.Fatalf("PullConsumers(%d) made %d consumers", c.n, len(cs))
		}
	}
	_, err := tp.PullConsumers("split", 6)
	optionName(t, "6 consumers of 5 partitions", err, "Consumers")
}

// groupInUse: a group cannot be opened twice at once; it can be reopened
// once all its consumers are closed.
func (s suite) groupInUse(t *testing.T) {
	tp := s.topic(t, isb.Partitions(2))
	cs, err := tp.PullConsumers("g", 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tp.PullConsumer("g"); !errors.Is(err, isb.ErrGroupInUse) {
		t.Fatalf("second open = %v, want ErrGroupInUse", err)
	}
	cs[0].Close()
	if _, err := tp.PullConsumer("g"); !errors.Is(err, isb.ErrGroupInUse) {
		t.Fatalf("open with one consumer of two still open = %v, want ErrGroupInUse", err)
	}
	cs[1].Close()
	cs[1].Close() // idempotent: must not free the group twice
	c := consumer(t, tp, "g")
	if _, err := tp.PullConsumer("g"); !errors.Is(err, isb.ErrGroupInUse) {
		t.Fatalf("open while reopened = %v, want ErrGroupInUse", err)
	}
	// Other groups are independent.
	consumer(t, tp, "other")
	c.Close()
}

// roundRobinPartitions: a consumer reads its partitions round-robin,
// starting after the one it read last, and skips empty ones.
func (s suite) roundRobinPartitions(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t, isb.Partitions(4))
	pr := tp.Producer(toPartition)
	produce(t, ctx, pr, Item{Producer: 0, Seq: 0}, Item{Producer: 2, Seq: 0}, Item{Producer: 0, Seq: 1}, Item{Producer: 2, Seq: 1})
	c := consumer(t, tp, "g", isb.BatchSize(1))
	expectBatch(t, ctx, c, 0, 0, []Item{{Producer: 0, Seq: 0}})
	expectBatch(t, ctx, c, 2, 0, []Item{{Producer: 2, Seq: 0}})
	expectBatch(t, ctx, c, 0, 1, []Item{{Producer: 0, Seq: 1}})
	expectBatch(t, ctx, c, 2, 1, []Item{{Producer: 2, Seq: 1}})
	// Last read: 2. Next: 3, then 0 (empty, skipped), then 1.
	produce(t, ctx, pr, Item{Producer: 1, Seq: 0}, Item{Producer: 3, Seq: 0}, Item{Producer: 3, Seq: 1})
	expectBatch(t, ctx, c, 3, 0, []Item{{Producer: 3, Seq: 0}})
	expectBatch(t, ctx, c, 1, 0, []Item{{Producer: 1, Seq: 0}})
	expectBatch(t, ctx, c, 3, 1, []Item{{Producer: 3, Seq: 1}})
	expectEmpty(t, c)
}

// pullWakesOnProduce: a consumer waiting on an empty topic is woken by every
// produce. Items are produced one at a time, each only after the previous
// one was pulled, so nearly every Pull waits; a lost wake-up hangs it until
// the test's timeout. A second group waits on the same topic throughout.
func (s suite) pullWakesOnProduce(t *testing.T) {
	const rounds = 500
	ctx := testContext(t)
	tp := s.topic(t, isb.Partitions(2))
	a := consumer(t, tp, "a")
	bs, err := tp.PullConsumers("b", 2)
	if err != nil {
		t.Fatal(err)
	}
	pulled := make(chan Item)
	errc := make(chan error, 3)
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, c := range append([]*isb.PullConsumer[Item]{a}, bs...) {
		t.Cleanup(func() { c.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				b, err := c.Pull(ctx)
				if err != nil {
					if !errors.Is(err, isb.ErrClosed) {
						errc <- err
					}
					return
				}
				if c == a {
					for _, it := range b.Items {
						select {
						case pulled <- it:
						case <-ctx.Done():
							return
						}
					}
				}
			}
		}()
	}
	// On failure, close the consumers before waiting for their goroutines.
	defer func() {
		for _, c := range append([]*isb.PullConsumer[Item]{a}, bs...) {
			c.Close()
		}
	}()
	pr := tp.Producer(nil)
	for i := range rounds {
		produce(t, ctx, pr, Item{Seq: i})
		select {
		case it := <-pulled:
			if it.Seq != i {
				t.Fatalf("pulled %v, want seq %d", it, i)
			}
		case err := <-errc:
			t.Fatal(err)
		case <-ctx.Done():
			t.Fatalf("round %d: the waiting Pull was never woken", i)
		}
	}
}

// commitWhilePullBlocked: a consumer's CommitTo and Commit return while a
// Pull of the same consumer is blocked on an empty topic (the reader of a
// pipeline commits acks while it waits for data), and the Pull still
// delivers the next item. A commit that waited for the Pull would return
// only when the Pull's context ended, failing the Pull.
func (s suite) commitWhilePullBlocked(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t)
	produce(t, ctx, tp.Producer(nil), seqs(0, 0, 3)...)
	c := consumer(t, tp, "g", isb.ManualCommit())
	pullItems(t, ctx, c, 3)
	pullCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	type result struct {
		b   isb.Batch[Item]
		err error
	}
	pulled := make(chan result, 1)
	go func() {
		b, err := c.Pull(pullCtx)
		b.Items = slices.Clone(b.Items)
		pulled <- result{b, err}
	}()
	time.Sleep(quiet) // let the Pull block
	if err := c.CommitTo(0, 2); err != nil {
		t.Fatalf("CommitTo while a Pull is blocked: %v", err)
	}
	if err := c.Commit(); err != nil {
		t.Fatalf("Commit while a Pull is blocked: %v", err)
	}
	if n := tp.Pending("g"); n != 0 {
		t.Fatalf("Pending after committing everything = %d, want 0", n)
	}
	produce(t, ctx, tp.Producer(nil), Item{Producer: 1})
	r := <-pulled
	if r.err != nil || !atOffset(t, r.b.Offset, 3) || !slices.Equal(r.b.Items, []Item{{Producer: 1}}) {
		t.Fatalf("the blocked Pull returned offset %d %v, %v; want offset 3 [{1 0}]", r.b.Offset, r.b.Items, r.err)
	}
}
