package pipeline

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/memory"
	"github.com/runnel-dev/runnel/isb/mmap"
)

// openGrouped opens an mmap topic of ints in dir whose commits are
// persisted by groupCommits every hour: only Close or an explicit persist
// writes them.
func openGrouped(t *testing.T, dir string) (*isb.Topic[int], *groupCommits[int]) {
	t.Helper()
	b, err := mmap.New[int](dir, mmap.SegmentSize(mmap.MinSegmentSize), mmap.MaxRetainedConsumedSegments(0))
	if err != nil {
		t.Fatal(err)
	}
	g := newGroupCommits[int](b, time.Hour)
	topic, err := isb.NewTopic[int]("t", g)
	if err != nil {
		t.Fatal(err)
	}
	return topic, g
}

func TestGroupCommitsPersistOnCloseAndDeferRelease(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	topic, g := openGrouped(t, dir)
	items := make([]int, 2000) // about 60 segments of one page
	if err := topic.Producer(nil).ProduceBatch(ctx, items); err != nil {
		t.Fatal(err)
	}
	c, err := topic.PullConsumer("g", isb.ManualCommit(), isb.BatchSize(2000))
	if err != nil {
		t.Fatal(err)
	}
	for read := int64(0); read < 2000; {
		b, err := c.Pull(ctx)
		if err != nil {
			t.Fatal(err)
		}
		read = b.End()
	}
	if err := c.CommitTo(0, 1500); err != nil {
		t.Fatal(err)
	}
	log := g.logs[0]
	if off, ok, err := log.Committed("g"); err != nil || !ok || off != 1500 {
		t.Fatalf("Committed = %d, %v; want the recorded 1500", off, ok)
	}
	if off, ok, err := log.Log.Committed("g"); err != nil || ok {
		t.Fatalf("storage holds commit %d before any pass", off)
	}
	if head := log.Log.Head(); head != 0 {
		t.Fatalf("storage released up to %d before the commit it relies on was persisted", head)
	}
	if err := g.persist(); err != nil {
		t.Fatal(err)
	}
	if off, ok, err := log.Log.Committed("g"); err != nil || !ok || off != 1500 {
		t.Fatalf("stored commit after a pass = %d, %v; want 1500", off, ok)
	}
	if head := log.Log.Head(); head == 0 || head > 1500 {
		t.Fatalf("head after a pass = %d, want released segments below 1500", head)
	}
	// A commit after the pass is stored by Close.
	if err := c.CommitTo(0, 1800); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := topic.Close(); err != nil {
		t.Fatal(err)
	}
	topic, _ = openGrouped(t, dir)
	defer topic.Close()
	if p := topic.Pending("g"); p != 200 {
		t.Fatalf("pending after reopen = %d, want 200 (commit 1800 of 2000)", p)
	}
}

func TestGroupCommitsDeleteGroupDropsPending(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	topic, g := openGrouped(t, dir)
	if err := topic.Producer(nil).ProduceBatch(ctx, []int{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	c, err := topic.PullConsumer("gone", isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pull(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.CommitTo(0, 2); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := topic.DeleteGroup("gone"); err != nil {
		t.Fatal(err)
	}
	if err := g.persist(); err != nil {
		t.Fatal(err)
	}
	if off, ok, err := g.logs[0].Committed("gone"); err != nil || ok {
		t.Fatalf("a deleted group's pending commit %d was persisted", off)
	}
	if err := topic.Close(); err != nil {
		t.Fatal(err)
	}
}

// failingLog fails every commit.
type failingLog struct{ isb.Log[int] }

var errDisk = errors.New("disk on fire")

func (failingLog) Commit(context.Context, string, int64) error { return errDisk }

type failingBackend struct{ isb.Backend[int] }

func (b failingBackend) Partition(p int) isb.Log[int] { return failingLog{b.Backend.Partition(p)} }

func TestGroupCommitsFailureSticks(t *testing.T) {
	ctx := context.Background()
	mem, err := memory.New[int]()
	if err != nil {
		t.Fatal(err)
	}
	g := newGroupCommits[int](failingBackend{mem}, time.Hour)
	topic, err := isb.NewTopic[int]("t", g)
	if err != nil {
		t.Fatal(err)
	}
	defer topic.Close()
	if err := topic.Producer(nil).ProduceBatch(ctx, []int{1, 2}); err != nil {
		t.Fatal(err)
	}
	c, err := topic.PullConsumer("g", isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Pull(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.CommitTo(0, 1); err != nil {
		t.Fatalf("the first commit is only recorded: %v", err)
	}
	// The next pass fails; from then on commits report it.
	if err := g.persist(); !errors.Is(err, errDisk) {
		t.Fatalf("persist = %v, want %v", err, errDisk)
	}
	if err := c.CommitTo(0, 2); !errors.Is(err, errDisk) {
		t.Fatalf("commit after a failed pass = %v, want %v", err, errDisk)
	}
}

func TestGroupCommitsCloseWithoutOpen(t *testing.T) {
	mem, err := memory.New[int]()
	if err != nil {
		t.Fatal(err)
	}
	// NewTopic refuses the options before opening the backend; Close
	// must not wait for a loop that never started.
	if _, err := isb.NewTopic[int]("t", newGroupCommits[int](mem, time.Hour), isb.Partitions(0)); err == nil {
		t.Fatal("NewTopic accepted 0 partitions")
	}
	g := newGroupCommits[int](mem, time.Hour)
	done := make(chan error)
	go func() { done <- g.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close of an unopened backend hangs")
	}
}

// persistedCommit, which a map's holds follow (map_resume.go), is what
// storage persisted, not what the reader recorded for the next pass: a
// hold moved past a commit not yet persisted would let storage release
// outputs a crash makes the map look for again.
func TestPersistedCommitIsWhatStorageHolds(t *testing.T) {
	ctx := context.Background()
	topic, g := openGrouped(t, t.TempDir())
	defer topic.Close()
	if err := topic.Producer(nil).ProduceBatch(ctx, make([]int, 100)); err != nil {
		t.Fatal(err)
	}
	c, err := topic.PullConsumer("g", isb.ManualCommit(), isb.BatchSize(100))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Pull(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.CommitTo(0, 60); err != nil {
		t.Fatal(err)
	}
	l := g.Partition(0) // the log the pipeline's buffer reads back
	if off, _, _ := l.Committed("g"); off != 60 {
		t.Fatalf("Committed = %d, want the recorded 60", off)
	}
	if off := persistedCommit(l, "g"); off != 0 {
		t.Fatalf("persistedCommit = %d before any pass, want 0 (the head)", off)
	}
	if err := g.persist(); err != nil {
		t.Fatal(err)
	}
	if off := persistedCommit(l, "g"); off != 60 {
		t.Fatalf("persistedCommit = %d after a pass, want 60", off)
	}
}
