package isbtest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/runnel-dev/runnel/isb"
)

// perPartition opens group with one consumer per partition (ManualCommit,
// BatchSize(10)); consumer i owns partition i. They close at cleanup.
func perPartition(t *testing.T, tp *isb.Topic[Item], group string) []*isb.PullConsumer[Item] {
	t.Helper()
	cs, err := tp.PullConsumers(group, tp.Partitions(), isb.BatchSize(10), isb.ManualCommit())
	if err != nil {
		t.Fatalf("PullConsumers(%q): %v", group, err)
	}
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	return cs
}

// closeAll closes every consumer of a group, so it can be deleted.
func closeAll(t *testing.T, cs []*isb.PullConsumer[Item]) {
	t.Helper()
	for _, c := range cs {
		if err := c.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
}

// deleteGroupRecomputesMin: deleting a group moves every partition's min to
// the lowest commit of the remaining groups, so Used drops by exactly what
// only the deleted group held, and the deleted name is a new group again.
func (s suite) deleteGroupRecomputesMin(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t, isb.Partitions(2))
	a, b := perPartition(t, tp, "a"), perPartition(t, tp, "b")
	pr := tp.Producer(toPartition)
	produce(t, ctx, pr, seqs(0, 0, 6)...) // partition 0: offsets 0..5
	produce(t, ctx, pr, seqs(1, 0, 4)...) // partition 1: offsets 0..3
	for p, n := range []int{6, 4} {
		expectItems(t, ctx, a[p], p, 0, seqs(p, 0, n))
		expectItems(t, ctx, b[p], p, 0, seqs(p, 0, n))
	}
	// Partition 0: a at 5, b at 2 (b is the min). Partition 1: a at 1, b
	// at 3 (a is the min).
	for _, c := range []struct {
		cs  []*isb.PullConsumer[Item]
		p   int
		off int64
	}{{a, 0, 5}, {b, 0, 2}, {a, 1, 1}, {b, 1, 3}} {
		if err := c.cs[c.p].CommitTo(c.p, c.off); err != nil {
			t.Fatal(err)
		}
	}
	if u, pa, pb := tp.Used(), tp.Pending("a"), tp.Pending("b"); u != 7 || pa != 4 || pb != 5 {
		t.Fatalf("before: Used() = %d, Pending(a) = %d, Pending(b) = %d; want 7, 4, 5", u, pa, pb)
	}
	closeAll(t, b)
	if err := tp.DeleteGroup("b"); err != nil {
		t.Fatalf("DeleteGroup(b): %v", err)
	}
	// Partition 0 releases 2..5 (3 items held only by b); partition 1
	// keeps its min at a's commit 1.
	if u, pa := tp.Used(), tp.Pending("a"); u != 4 || pa != 4 {
		t.Fatalf("after: Used() = %d, Pending(a) = %d; want 4 and 4", u, pa)
	}
	// b is now a group that does not exist: it would start at the
	// earliest retained item (at most the min: 5 and 1).
	e0, e1 := tp.Earliest(0), tp.Earliest(1)
	if e0 > 5 || e1 > 1 {
		t.Fatalf("earliest retained %d and %d, past the remaining group's commits 5 and 1", e0, e1)
	}
	fresh := (6 - e0) + (4 - e1)
	if pb, pn := tp.Pending("b"), tp.Pending("never"); pb != fresh || pn != fresh {
		t.Fatalf("after: Pending(b) = %d, Pending(never) = %d; want %d and %d", pb, pn, fresh, fresh)
	}
	// Created again, b starts as a new group: at the earliest retained
	// item, not at its old commits (2 and 3), and holds what it has not
	// committed.
	b = perPartition(t, tp, "b")
	if u := tp.Used(); u != fresh {
		t.Fatalf("after b joined again: Used() = %d, want %d", u, fresh)
	}
	expectItems(t, ctx, b[0], 0, e0, seqs(0, int(e0), 6-int(e0)))
	expectItems(t, ctx, b[1], 1, e1, seqs(1, int(e1), 4-int(e1)))
}

// deleteGroupReleasesCapacity: a producer queued on a full topic is
// admitted once the only lagging group is deleted.
func (s suite) deleteGroupReleasesCapacity(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t, isb.Capacity(4), isb.WithFullMode(isb.FullWait))
	fast := consumer(t, tp, "fast", isb.BatchSize(10), isb.ManualCommit())
	slow, err := tp.PullConsumer("slow")
	if err != nil {
		t.Fatal(err)
	}
	pr := tp.Producer(nil)
	produce(t, ctx, pr, seqs(0, 0, 4)...)
	expectItems(t, ctx, fast, 0, 0, seqs(0, 0, 4))
	if err := fast.Commit(); err != nil {
		t.Fatal(err)
	}
	if u := tp.Used(); u != 4 {
		t.Fatalf("Used() = %d, want 4 (held by slow)", u)
	}
	done := make(chan error, 1)
	go func() { done <- pr.Produce(ctx, Item{Seq: 4}) }()
	waitFor(t, ctx, "the producer to queue", func() bool { return tp.Waiting() == 1 })
	if err := tp.DeleteGroup("slow"); !errors.Is(err, isb.ErrGroupInUse) {
		t.Fatalf("DeleteGroup with an open consumer = %v, want ErrGroupInUse", err)
	}
	if w := tp.Waiting(); w != 1 {
		t.Fatalf("after a refused delete: Waiting() = %d, want 1", w)
	}
	slow.Close()
	if err := tp.DeleteGroup("slow"); err != nil {
		t.Fatalf("DeleteGroup(slow): %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("queued Produce = %v, want nil", err)
		}
	case <-ctx.Done():
		t.Fatal("the queued producer was not admitted after the lagging group was deleted")
	}
	if u, w := tp.Used(), tp.Waiting(); u != 1 || w != 0 {
		t.Fatalf("Used() = %d, Waiting() = %d; want 1 (the admitted item) and 0", u, w)
	}
	expectBatch(t, ctx, fast, 0, 4, []Item{{Seq: 4}})
}

// deleteGroupErrors: unknown groups, groups in use, deleting twice, the
// last group (nothing is released) and a closed topic.
func (s suite) deleteGroupErrors(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t)
	if err := tp.DeleteGroup("never"); !errors.Is(err, isb.ErrUnknownGroup) || !strings.Contains(err.Error(), `"never"`) {
		t.Fatalf("DeleteGroup of a group never created = %v, want ErrUnknownGroup naming it", err)
	}
	produce(t, ctx, tp.Producer(nil), seqs(0, 0, 3)...)
	c := consumer(t, tp, "g", isb.BatchSize(1), isb.ManualCommit())
	expectBatch(t, ctx, c, 0, 0, seqs(0, 0, 1))
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	err := tp.DeleteGroup("g")
	if !errors.Is(err, isb.ErrGroupInUse) || !strings.Contains(err.Error(), `"g"`) {
		t.Fatalf("DeleteGroup with an open consumer = %v, want ErrGroupInUse naming the group", err)
	}
	c.Close()
	if err := tp.DeleteGroup("g"); err != nil {
		t.Fatalf("DeleteGroup(g): %v", err)
	}
	// g was the last group: nothing more is released, the two items it
	// had not committed stay for a group created later.
	if u, n, want := tp.Used(), tp.Pending("g"), 3-tp.Earliest(0); u != 2 || n != want {
		t.Fatalf("after deleting the last group: Used() = %d, Pending(g) = %d; want 2 and %d (from the earliest retained item)", u, n, want)
	}
	if err := tp.DeleteGroup("g"); !errors.Is(err, isb.ErrUnknownGroup) {
		t.Fatalf("second DeleteGroup(g) = %v, want ErrUnknownGroup", err)
	}
	late := consumer(t, tp, "late", isb.BatchSize(1))
	e := tp.Earliest(0)
	expectBatch(t, ctx, late, 0, e, seqs(0, int(e), 1))
	late.Close()
	if err := tp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tp.DeleteGroup("late"); !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("DeleteGroup on a closed topic = %v, want ErrClosed", err)
	}
}

// deleteGroupWhileOthersCommit: a deletion racing commits of other groups
// and producers loses nothing and leaves Used equal to what the remaining
// group has not committed (run with -race).
func (s suite) deleteGroupWhileOthersCommit(t *testing.T) {
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	const n = 200 // far more than the capacity: the producer waits for the deletions
	tp := s.topic(t, isb.Partitions(2), isb.Capacity(16), isb.WithFullMode(isb.FullWait))
	keep := consumer(t, tp, "keep", isb.BatchSize(4))
	gone := make([]string, 8)
	for i := range gone {
		gone[i] = string(rune('a' + i))
		c, err := tp.PullConsumer(gone[i])
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	// A failing goroutine cancels ctx, so the pulls below end instead of
	// waiting for capacity that never comes.
	var wg sync.WaitGroup
	fail := func(what string, err error) {
		t.Errorf("%s: %v", what, err)
		cancel()
	}
	wg.Go(func() {
		pr := tp.Producer(nil)
		for i := range n {
			if err := pr.Produce(ctx, Item{Seq: i}); err != nil {
				fail("Produce", err)
				return
			}
		}
	})
	wg.Go(func() {
		for _, g := range gone {
			if err := tp.DeleteGroup(g); err != nil {
				fail("DeleteGroup("+g+")", err)
				return
			}
		}
	})
	// The producer can only finish once every lagging group is deleted.
	var got []Item
	for len(got) < n {
		b, err := keep.Pull(ctx)
		if err != nil {
			wg.Wait()
			t.Fatalf("Pull after %d items: %v", len(got), err)
		}
		got = append(got, b.Items...)
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	checkExactlyOnce(t, "keep", got, 1, n)
	if err := keep.Commit(); err != nil {
		t.Fatal(err)
	}
	// a no longer exists: it would start at the earliest retained items.
	var retained int64
	for p := range 2 {
		retained += tp.Earliest(p)
	}
	if gs := tp.Pending("a"); gs != n-retained {
		t.Fatalf("Pending(a) = %d after every group but keep was deleted and keep committed all, want %d (everything retained)", gs, n-retained)
	}
	if u := tp.Used(); u != 0 {
		t.Fatalf("Used() = %d after keep committed everything, want 0", u)
	}
}
