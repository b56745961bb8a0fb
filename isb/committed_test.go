package isb

import (
	"context"
	"errors"
	"testing"
)

// TestCommittedReportsTheGroupsCommit: Committed says what the group has
// committed of a partition the consumer owns, as found when the consumer
// was created and after its own commits; another partition is
// ErrNotAssigned.
func TestCommittedReportsTheGroupsCommit(t *testing.T) {
	ctx := context.Background()
	tp, err := NewTopic[int]("nums", &stubBackend{}, Partitions(2))
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	if _, err := tp.Producer(nil).ProduceTo(ctx, 1, []int{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	cs, err := tp.PullConsumers("g", 2, ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	if off, err := cs[1].Committed(1); err != nil || off != 0 {
		t.Fatalf("Committed(1) of a new group = %d, %v; want 0", off, err)
	}
	if bt, err := cs[1].Pull(ctx); err != nil || len(bt.Items) != 3 {
		t.Fatalf("Pull = %v, %v", bt.Items, err)
	}
	if err := cs[1].CommitTo(1, 2); err != nil {
		t.Fatal(err)
	}
	if off, err := cs[1].Committed(1); err != nil || off != 2 {
		t.Fatalf("Committed(1) after CommitTo(1, 2) = %d, %v; want 2", off, err)
	}
	if _, err := cs[1].Committed(0); !errors.Is(err, ErrNotAssigned) {
		t.Fatalf("Committed of another consumer's partition: %v, want ErrNotAssigned", err)
	}
	for _, c := range cs {
		c.Close()
	}
	c, err := tp.PullConsumer("g")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if off, err := c.Committed(1); err != nil || off != 2 {
		t.Fatalf("a new consumer of the group: Committed(1) = %d, %v; want 2", off, err)
	}
}
