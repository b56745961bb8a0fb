package mmap

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/runnel-dev/runnel/isb"
)

// DeleteGroup removes the group's checkpoint directory in every partition,
// lets retention delete the segments only that group held, and the group
// is not recovered by the next open.
func TestDeleteGroupDurable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const gone = "a/b" // escaped on disk as a%2Fb
	openTopic := func() *isb.Topic[string] {
		t.Helper()
		b, err := New[string](dir, SegmentSize(MinSegmentSize), MaxRetainedConsumedSegments(0))
		if err != nil {
			t.Fatal(err)
		}
		tp, err := isb.NewTopic[string](testTopic, b, isb.Partitions(2))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tp.Close() })
		return tp
	}

	tp := openTopic()
	for _, g := range []string{"keep", gone} {
		c, err := tp.PullConsumer(g)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	const n = 1000 // 500 per partition: several 4 KiB segments each
	pr := tp.Producer(nil)
	for i := range n {
		if err := pr.Produce(ctx, item(i)); err != nil {
			t.Fatal(err)
		}
	}
	keep, err := tp.PullConsumer("keep", isb.BatchSize(100), isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	for got := 0; got < n; {
		b, err := keep.Pull(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got += len(b.Items)
		if err := keep.CommitTo(b.Partition, b.End()); err != nil {
			t.Fatal(err)
		}
	}
	keep.Close()
	before := [2]int{len(segFiles(t, dir, 0)), len(segFiles(t, dir, 1))}
	if before[0] < 3 || before[1] < 3 {
		t.Fatalf("segments per partition before the delete = %v, want at least 3 each (the test needs retention to have work)", before)
	}
	if u := tp.Used(); u != n {
		t.Fatalf("Used() = %d, want %d (all held by %q)", u, n, gone)
	}

	if err := tp.DeleteGroup(gone); err != nil {
		t.Fatalf("DeleteGroup: %v", err)
	}
	if u := tp.Used(); u != 0 {
		t.Fatalf("Used() after DeleteGroup = %d, want 0", u)
	}
	for p := range 2 {
		offsets := filepath.Join(partDir(dir, p), offsetsDir)
		if exists(filepath.Join(offsets, "a%2Fb")) {
			t.Fatalf("partition %d: the deleted group's directory is still there", p)
		}
		if !exists(filepath.Join(offsets, "keep", consumerFile)) {
			t.Fatalf("partition %d: the remaining group's checkpoint is gone", p)
		}
		// Everything is consumed by keep: only the active segment stays.
		if segs := segFiles(t, dir, p); len(segs) != 1 {
			t.Fatalf("partition %d: %d segments after the delete, want 1 (the active one; %d before)", p, len(segs), before[p])
		}
	}
	if err := tp.Close(); err != nil {
		t.Fatal(err)
	}

	tp = openTopic()
	if err := tp.DeleteGroup(gone); !errors.Is(err, isb.ErrUnknownGroup) {
		t.Fatalf("DeleteGroup of the deleted group after reopening = %v, want ErrUnknownGroup", err)
	}
	// A group of that name would be new: it starts at the earliest
	// retained items, the active segments that keep holds no more.
	retained := int64(n) - tp.Earliest(0) - tp.Earliest(1)
	if u, pg := tp.Used(), tp.Pending(gone); u != 0 || pg != retained || retained <= 0 {
		t.Fatalf("after reopening: Used() = %d, Pending(%q) = %d; want 0 and %d", u, gone, pg, retained)
	}
}

// Groups of a reopened backend no longer lists a deleted group, and a
// group storage never held deletes without error.
func TestDeleteGroupBackend(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, 2)
	appendItems(t, b.Partition(0), 0, 10, 5)
	for _, g := range []string{"x", "y"} {
		if err := b.Partition(0).Commit(bg, g, 4); err != nil {
			t.Fatal(err)
		}
		if err := b.Partition(1).Commit(bg, g, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.DeleteGroup("x"); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteGroup("never"); err != nil {
		t.Fatalf("DeleteGroup of a group never committed = %v, want nil", err)
	}
	if gs := groupsOf(t, b); !slices.Equal(gs, []string{"y"}) {
		t.Fatalf("Groups() = %v, want [y]", gs)
	}
	if off, ok := committed(t, b.Partition(0), "x"); ok || off != 0 {
		t.Fatalf("Committed(x) = %d, %v; want the head 0 and false", off, ok)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = open(t, dir, 2)
	if gs := groupsOf(t, b); !slices.Equal(gs, []string{"y"}) {
		t.Fatalf("after reopening: Groups() = %v, want [y]", gs)
	}
	for p := range 2 {
		if exists(filepath.Join(partDir(dir, p), offsetsDir, "x")) {
			t.Fatalf("partition %d: offsets/x survived the delete", p)
		}
	}
	if off, ok := committed(t, b.Partition(0), "y"); !ok || off != 4 {
		t.Fatalf("Committed(y) after reopening = %d, %v; want 4 and true", off, ok)
	}
	// A group committed again under the deleted name is new.
	if err := b.Partition(0).Commit(bg, "x", 2); err != nil {
		t.Fatal(err)
	}
	if off, ok := committed(t, b.Partition(0), "x"); !ok || off != 2 {
		t.Fatalf("Committed(x) of the recreated group = %d, %v; want 2 and true", off, ok)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteGroup("y"); !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("DeleteGroup after Close = %v, want isb.ErrClosed", err)
	}
}
