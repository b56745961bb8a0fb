package isb_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/runnel-dev/runnel/isb"
)

// waitLogged waits (bounded) until obs holds a line with message msg and
// returns the first.
func waitLogged(t *testing.T, obs *observer.ObservedLogs, msg string) observer.LoggedEntry {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if es := obs.FilterMessage(msg).All(); len(es) > 0 {
			return es[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q logged within 10 s; logged: %v", msg, obs.All())
		}
		time.Sleep(time.Millisecond)
	}
}

// A producer blocked on a full topic is reported every StallReport while it
// waits, naming the group that holds the capacity and how far behind it
// is; the report stops when the producer gets in.
func TestStallReportNamesTheGroupsHoldingCapacity(t *testing.T) {
	core, obs := observer.New(zap.WarnLevel)
	tp := newTopic[int](t, "orders", isb.Partitions(2), isb.Capacity(10),
		isb.TopicLogger(zap.New(core)), isb.StallReport(5*time.Millisecond))
	slow, err := tp.PullConsumer("slow", isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fast, err := tp.PullConsumer("fast", isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	ctx := context.Background()
	prod := tp.Producer(isb.BySelector(func(v, _ int) int { return v % 2 }))
	if err := prod.ProduceBatch(ctx, []int{0, 2, 4, 6, 8, 10, 1, 3, 5, 7}); err != nil { // 6 in partition 0, 4 in 1
		t.Fatal(err)
	}
	// fast reads both partitions and commits 5 of partition 0: slow holds
	// all 10, fast 5.
	readAll := func(c *isb.PullConsumer[int]) {
		for range 2 {
			if _, err := c.Pull(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	readAll(fast)
	if err := fast.CommitTo(0, 5); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- prod.Produce(ctx, 9) }()

	e := waitLogged(t, obs, "isb: a producer waits for capacity on a full topic")
	f := e.ContextMap()
	if f["topic"] != "orders" || f["wants"] != int64(1) || f["capacity"] != int64(10) || f["used"] != int64(10) {
		t.Errorf("report fields %v", f)
	}
	want := []any{
		"slow: 10 uncommitted (partition 0: commit 0, tail 6, partition 1: commit 0, tail 4)",
		"fast: 5 uncommitted (partition 1: commit 0, tail 4, partition 0: commit 5, tail 6)",
	}
	if got, _ := f["groupsByUncommitted"].([]any); !slices.Equal(got, want) {
		t.Errorf("groups %q, want %q", got, want)
	}
	// Committing releases the capacity: the producer gets in.
	readAll(slow)
	for _, c := range []*isb.PullConsumer[int]{slow, fast} {
		for p := range 2 {
			if err := c.CommitTo(p, []int64{6, 4}[p]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A Pull that waits for data while producers wait for capacity its own
// uncommitted items hold is reported: only its commit can end both waits.
func TestStallReportPullHoldingCapacity(t *testing.T) {
	core, obs := observer.New(zap.WarnLevel)
	tp := newTopic[int](t, "loop", isb.Capacity(10), isb.TopicLogger(zap.New(core)), isb.StallReport(5*time.Millisecond))
	c, err := tp.PullConsumer("batcher", isb.ManualCommit(), isb.BatchSize(10))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prod := tp.Producer(nil)
	if err := prod.ProduceBatch(ctx, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}); err != nil {
		t.Fatal(err)
	}
	if b, err := c.Pull(ctx); err != nil || len(b.Items) != 10 {
		t.Fatalf("first pull: %d items, %v", len(b.Items), err)
	}
	produced := make(chan error, 1)
	go func() { produced <- prod.Produce(ctx, 10) }() // waits: the consumer holds all 10
	for tp.Waiting() == 0 {
		time.Sleep(time.Millisecond)
	}
	pulled := make(chan error, 1)
	go func() { _, err := c.Pull(ctx); pulled <- err }()
	e := waitLogged(t, obs, "isb: a Pull waits for data while producers wait for capacity its consumer holds: commit what it has processed")
	if f := e.ContextMap(); f["group"] != "batcher" || f["readNotCommitted"] != int64(10) || f["capacity"] != int64(10) {
		t.Errorf("report fields %v", f)
	}
	cancel()
	if err := <-pulled; !errors.Is(err, context.Canceled) {
		t.Errorf("the waiting Pull returned %v, want context.Canceled", err)
	}
	if err := <-produced; !errors.Is(err, context.Canceled) {
		t.Errorf("the waiting produce returned %v, want context.Canceled", err)
	}
}

// MaxWait bounds a Pull's wait: with nothing to read it returns an empty
// batch and no error; data that comes is delivered as before.
func TestPullMaxWait(t *testing.T) {
	tp := newTopic[int](t, "quiet")
	c, err := tp.PullConsumer("g", isb.MaxWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	for range 3 {
		b, err := c.Pull(ctx)
		if err != nil || len(b.Items) != 0 {
			t.Fatalf("pull of an empty topic under MaxWait: %d items, %v; want an empty batch, nil", len(b.Items), err)
		}
	}
	if err := tp.Producer(nil).Produce(ctx, 7); err != nil {
		t.Fatal(err)
	}
	if b, err := c.Pull(ctx); err != nil || !slices.Equal(b.Items, []int{7}) {
		t.Fatalf("pull after a produce: %v, %v", b.Items, err)
	}
	if _, err := tp.PullConsumer("h", isb.MaxWait(-time.Second)); !errors.Is(err, isb.ErrInvalidOption) {
		t.Errorf("MaxWait(-1s): %v, want ErrInvalidOption", err)
	}
	if _, err := isb.NewTopic[int]("t", nil, isb.StallReport(0)); !errors.Is(err, isb.ErrInvalidOption) {
		t.Errorf("StallReport(0): %v, want ErrInvalidOption", err)
	}
}
