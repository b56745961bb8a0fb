package isb

import (
	"context"
	"testing"
	"time"
)

// TestCommitToWhilePullBlocked commits an earlier batch while a Pull of the
// same consumer is blocked on an empty partition: CommitTo returns (and the
// commit reaches storage) before any data arrives, and the blocked Pull
// still wakes on the next produce.
func TestCommitToWhilePullBlocked(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tp, err := NewTopic[int]("nums", &stubBackend{})
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	if err := tp.Producer(nil).ProduceBatch(ctx, []int{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	c, err := tp.PullConsumer("g", ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if bt, err := c.Pull(ctx); err != nil || len(bt.Items) != 3 {
		t.Fatalf("first Pull = %v, %v; want 3 items", bt.Items, err)
	}
	type result struct {
		items []int
		err   error
	}
	pulled := make(chan result, 1)
	go func() {
		bt, err := c.Pull(ctx)
		pulled <- result{append([]int(nil), bt.Items...), err}
	}()
	// Blocked: the Pull registered with the partition's waiters.
	for tp.parts[0].waiters.n.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := c.CommitTo(0, 2); err != nil {
		t.Fatalf("CommitTo while Pull is blocked: %v", err)
	}
	if err := c.Commit(); err != nil {
		t.Fatalf("Commit while Pull is blocked: %v", err)
	}
	if n := tp.Pending("g"); n != 0 {
		t.Fatalf("Pending after the commits = %d, want 0", n)
	}
	select {
	case r := <-pulled:
		t.Fatalf("Pull returned %v, %v before anything was produced", r.items, r.err)
	default:
	}
	if err := tp.Producer(nil).Produce(ctx, 4); err != nil {
		t.Fatal(err)
	}
	if r := <-pulled; r.err != nil || len(r.items) != 1 || r.items[0] != 4 {
		t.Fatalf("blocked Pull = %v, %v; want [4]", r.items, r.err)
	}
}
