package isbtest

import (
	"errors"
	"testing"

	"github.com/runnel-dev/runnel/isb"
)

// Reopen checks a restart at the topic level on durable storage: a topic
// opened on a new Backend after the first topic closed recovers its groups
// and their commits (a consumer resumes exactly after what was committed,
// uncommitted items are delivered again), the capacity they hold, the
// offsets appends go on from, and that a deleted group stays deleted.
func Reopen(t *testing.T, f StorageFactory) {
	s := f(t)
	if !s.Durable {
		t.Skip("storage does not outlive its Backend")
	}
	ctx := testContext(t)
	opts := []isb.TopicOption{isb.Partitions(2), isb.Capacity(10)}

	tp := s.topic(t, "orders", opts...)
	if err := tp.Producer(nil).ProduceBatch(ctx, seqs(0, 0, 6)); err != nil { // p0: 0 2 4, p1: 1 3 5
		t.Fatal(err)
	}
	c, err := tp.PullConsumer("g", isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	pullItems(t, ctx, c, 6)
	if err := c.CommitTo(0, 3); err != nil {
		t.Fatal(err)
	}
	if err := c.CommitTo(1, 1); err != nil {
		t.Fatal(err)
	}
	gone, err := tp.PullConsumer("gone")
	if err != nil {
		t.Fatal(err)
	}
	gone.Close()
	if err := tp.DeleteGroup("gone"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := tp.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	tp = s.topic(t, "orders", opts...)
	defer func() {
		if err := tp.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	if used, pending := tp.Used(), tp.Pending("g"); used != 2 || pending != 2 {
		t.Fatalf("after the restart Used = %d, Pending(g) = %d; want 2 and 2 (partition 1 offsets 1 and 2)", used, pending)
	}
	if err := tp.DeleteGroup("gone"); !errors.Is(err, isb.ErrUnknownGroup) {
		t.Fatalf("DeleteGroup of the group deleted before the restart: %v, want ErrUnknownGroup", err)
	}
	c = consumer(t, tp, "g", isb.ManualCommit())
	expectItems(t, ctx, c, 1, 1, []Item{{Seq: 3}, {Seq: 5}})
	expectEmpty(t, c)
	if err := tp.Producer(nil).ProduceBatch(ctx, seqs(1, 0, 2)); err != nil {
		t.Fatal(err)
	}
	got := pullItems(t, ctx, c, 2)
	sortItems(got)
	if got[0] != (Item{Producer: 1, Seq: 0}) || got[1] != (Item{Producer: 1, Seq: 1}) {
		t.Fatalf("items produced after the restart: %v", got)
	}
	if p0, p1 := tp.Earliest(0), tp.Earliest(1); p0 > 3 || p1 > 1 {
		t.Fatalf("earliest retained after the restart %d and %d; want at most the commits 3 and 1", p0, p1)
	}
}
