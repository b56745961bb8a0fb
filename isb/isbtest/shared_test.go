package isbtest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
)

// sharedStorage is store as a Storage: every Backend is a new process.
func sharedStorage(store *isbtest.SharedStore[isbtest.Item]) isbtest.Storage {
	return isbtest.Storage{New: func() (isb.Backend[isbtest.Item], error) { return store.Backend(), nil }, Durable: true}
}

// sharedTopic opens a topic instance (one "process") on store.
func sharedTopic(t testing.TB, store *isbtest.SharedStore[isbtest.Item], name string, opts ...isb.TopicOption) (*isb.Topic[isbtest.Item], error) {
	return isbtest.TopicFactory(func(testing.TB) isbtest.Storage { return sharedStorage(store) })(t, name, opts...)
}

// The storage suites on storage shared by processes: every reopen is a
// new Backend (a new process) on the same store.
func TestSharedSuite(t *testing.T) {
	isbtest.RunStorage(t, func(testing.TB) isbtest.Storage {
		return sharedStorage(isbtest.NewSharedStore[isbtest.Item]())
	})
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// A Pull blocked in one topic instance wakes on an append made outside it
// (another process's producer, straight into the store).
func TestSharedPullWakesOnOutsideAppend(t *testing.T) {
	ctx := testCtx(t)
	store := isbtest.NewSharedStore[isbtest.Item]()
	tp, err := sharedTopic(t, store, "orders", isb.Partitions(2))
	if err != nil {
		t.Fatal(err)
	}
	c, err := tp.PullConsumer("g")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	type result struct {
		b   isb.Batch[isbtest.Item]
		err error
	}
	pulled := make(chan result, 1)
	go func() {
		b, err := c.Pull(ctx)
		b.Items = slices.Clone(b.Items)
		pulled <- result{b, err}
	}()
	select {
	case r := <-pulled:
		t.Fatalf("Pull returned %v, %v from an empty topic", r.b, r.err)
	case <-time.After(20 * time.Millisecond):
	}
	if _, err := store.Append(1, []isbtest.Item{{Producer: 9, Seq: 1}}); err != nil {
		t.Fatal(err)
	}
	r := <-pulled
	if r.err != nil || r.b.Partition != 1 || r.b.Offset != 0 || !slices.Equal(r.b.Items, []isbtest.Item{{Producer: 9, Seq: 1}}) {
		t.Fatalf("Pull = partition %d offset %d %v, %v; want partition 1 offset 0 [{9 1}]", r.b.Partition, r.b.Offset, r.b.Items, r.err)
	}
}

// Two topic instances join one group as members 0 and 1 of 2: they split
// the partitions, each reads exactly its own, a third claim of a member's
// partitions is refused, and commits are kept by the store so a member that
// rejoins in another instance resumes from them.
func TestSharedMembersSplitPartitions(t *testing.T) {
	ctx := testCtx(t)
	store := isbtest.NewSharedStore[isbtest.Item]()
	a, err := sharedTopic(t, store, "orders", isb.Partitions(3))
	if err != nil {
		t.Fatal(err)
	}
	b, err := sharedTopic(t, store, "orders", isb.Partitions(3))
	if err != nil {
		t.Fatal(err)
	}
	var items []isbtest.Item
	for i := range 9 {
		items = append(items, isbtest.Item{Producer: 1, Seq: i})
	}
	if err := a.Producer(nil).ProduceBatch(ctx, items); err != nil { // round-robin: 3 per partition
		t.Fatal(err)
	}
	m0, err := a.JoinGroup("g", 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	m1, err := b.JoinGroup("g", 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got0, got1 := m0.Assigned(), m1.Assigned(); !slices.Equal(got0, []int{0, 1}) || !slices.Equal(got1, []int{2}) {
		t.Fatalf("members own %v and %v; want [0 1] and [2]", got0, got1)
	}
	if _, err := b.JoinGroup("g", 0, 2); !errors.Is(err, isb.ErrGroupInUse) {
		t.Fatalf("member 0 joining again in the other instance: %v; want ErrGroupInUse", err)
	}
	if _, err := a.PullConsumers("g", 1); !errors.Is(err, isb.ErrGroupInUse) {
		t.Fatalf("the whole group opened while member 0 is open: %v; want ErrGroupInUse", err)
	}
	read := func(c *isb.PullConsumer[isbtest.Item], n int) map[int][]int {
		got := map[int][]int{}
		for total := 0; total < n; {
			bt, err := c.Pull(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range bt.Items {
				got[bt.Partition] = append(got[bt.Partition], it.Seq)
			}
			total += len(bt.Items)
		}
		if err := c.Commit(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := read(m0, 6); len(got) != 2 || !slices.Equal(got[0], []int{0, 3, 6}) || !slices.Equal(got[1], []int{1, 4, 7}) {
		t.Fatalf("member 0 read %v; want partitions 0 and 1 only, 3 items each", got)
	}
	if got := read(m1, 3); len(got) != 1 || !slices.Equal(got[2], []int{2, 5, 8}) {
		t.Fatalf("member 1 read %v; want partition 2 only", got)
	}
	for p := range 3 {
		if off, ok := store.Committed(p, "g"); !ok || off != 3 {
			t.Fatalf("store holds commit %d, %v of partition %d; want 3", off, ok, p)
		}
	}
	// Member 1 leaves; more arrives; member 1 rejoins in instance a,
	// which never read partition 2: it resumes from the store's commit.
	if err := m1.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(2, []isbtest.Item{{Producer: 2, Seq: 100}}); err != nil {
		t.Fatal(err)
	}
	m1a, err := a.JoinGroup("g", 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer m1a.Close()
	bt, err := m1a.Pull(ctx)
	if err != nil || bt.Partition != 2 || bt.Offset != 3 || len(bt.Items) != 1 || bt.Items[0].Seq != 100 {
		t.Fatalf("rejoined member 1 pulled partition %d offset %d %v, %v; want partition 2 offset 3 [seq 100]", bt.Partition, bt.Offset, bt.Items, err)
	}
	if _, err := a.JoinGroup("g", 2, 2); err == nil {
		t.Fatal("member 2 of 2 was accepted")
	}
	m0.Close()
}

// Storage that enforces its own limit: FullFail returns ErrFull, TryProduce
// reports false, and a FullWait producer waits until a commit made in
// another topic instance makes room, then stores its item.
func TestSharedStorageLimit(t *testing.T) {
	ctx := testCtx(t)
	store := isbtest.NewSharedStore[isbtest.Item](isbtest.SharedLimit(2))
	failing, err := sharedTopic(t, store, "orders", isb.WithFullMode(isb.FullFail))
	if err != nil {
		t.Fatal(err)
	}
	waiting, err := sharedTopic(t, store, "orders")
	if err != nil {
		t.Fatal(err)
	}
	reader, err := sharedTopic(t, store, "orders")
	if err != nil {
		t.Fatal(err)
	}
	c, err := reader.JoinGroup("g", 0, 1, isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := failing.Producer(nil).ProduceBatch(ctx, []isbtest.Item{{Seq: 0}, {Seq: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := failing.Producer(nil).Produce(ctx, isbtest.Item{Seq: 2}); !errors.Is(err, isb.ErrFull) {
		t.Fatalf("FullFail produce into full storage: %v; want ErrFull", err)
	}
	if ok, err := waiting.Producer(nil).TryProduce(ctx, isbtest.Item{Seq: 2}); ok || err != nil {
		t.Fatalf("TryProduce into full storage = %v, %v; want false, nil", ok, err)
	}
	done := make(chan error, 1)
	go func() { done <- waiting.Producer(nil).Produce(ctx, isbtest.Item{Seq: 2}) }()
	select {
	case err := <-done:
		t.Fatalf("FullWait produce returned %v while storage is full", err)
	case <-time.After(20 * time.Millisecond):
	}
	bt, err := c.Pull(ctx)
	if err != nil || len(bt.Items) != 2 {
		t.Fatalf("Pull = %v, %v; want 2 items", bt.Items, err)
	}
	if err := c.CommitTo(0, 1); err != nil { // room for one
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("FullWait produce after a commit made room: %v", err)
	}
	if tail := waiting.Pending("g"); tail != 2 {
		t.Fatalf("Pending = %d; want 2 (offsets 1 and 2)", tail)
	}
	bt, err = c.Pull(ctx)
	if err != nil || bt.Offset != 2 || len(bt.Items) != 1 || bt.Items[0].Seq != 2 {
		t.Fatalf("Pull = offset %d %v, %v; want offset 2 [seq 2]", bt.Offset, bt.Items, err)
	}
}

// A claim the store takes away (a lease not renewed in time) stops the
// consumer: a blocked Pull wakes with ErrClaimLost, a commit is refused,
// and another member can claim the partitions and resume from the commit.
func TestSharedClaimLost(t *testing.T) {
	ctx := testCtx(t)
	store := isbtest.NewSharedStore[isbtest.Item]()
	tp, err := sharedTopic(t, store, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Producer(nil).ProduceBatch(ctx, []isbtest.Item{{Seq: 0}, {Seq: 1}}); err != nil {
		t.Fatal(err)
	}
	c, err := tp.JoinGroup("g", 0, 1, isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if b, err := c.Pull(ctx); err != nil || len(b.Items) != 2 {
		t.Fatalf("Pull = %v, %v; want 2 items", b.Items, err)
	}
	if err := c.CommitTo(0, 1); err != nil {
		t.Fatal(err)
	}
	pulled := make(chan error, 1)
	go func() {
		_, err := c.Pull(ctx) // nothing more to read: blocks
		pulled <- err
	}()
	store.Expire("g")
	if err := <-pulled; !errors.Is(err, isb.ErrClaimLost) {
		t.Fatalf("blocked Pull after the claim expired = %v, want ErrClaimLost", err)
	}
	if err := c.CommitTo(0, 2); !errors.Is(err, isb.ErrClaimLost) {
		t.Fatalf("CommitTo after the claim expired = %v, want ErrClaimLost", err)
	}
	if off, _ := store.Committed(0, "g"); off != 1 {
		t.Fatalf("store holds commit %d, want 1 (the lost consumer committed nothing more)", off)
	}
	other, err := sharedTopic(t, store, "orders")
	if err != nil {
		t.Fatal(err)
	}
	c2, err := other.JoinGroup("g", 0, 1)
	if err != nil {
		t.Fatalf("a second process joins after the claim expired: %v", err)
	}
	defer c2.Close()
	if b, err := c2.Pull(ctx); err != nil || b.Offset != 1 || len(b.Items) != 1 || b.Items[0].Seq != 1 {
		t.Fatalf("Pull of the new member = offset %d %v, %v; want offset 1 [seq 1]", b.Offset, b.Items, err)
	}
}

// A claim in doubt (storage could not confirm it for a whole TTL) holds
// back the consumer's reads but does not end it: a Pull delivers nothing
// while in doubt, even with items waiting, and MaxWait still bounds it;
// once storage confirms the claim, the same Pull delivers, from where
// the consumer was; commits go through meanwhile. A doubt that ends in a
// lost claim ends the blocked Pull with ErrClaimLost.
func TestSharedClaimInDoubt(t *testing.T) {
	ctx := testCtx(t)
	store := isbtest.NewSharedStore[isbtest.Item]()
	tp, err := sharedTopic(t, store, "orders")
	if err != nil {
		t.Fatal(err)
	}
	prod := tp.Producer(nil)
	if err := prod.ProduceBatch(ctx, []isbtest.Item{{Seq: 0}}); err != nil {
		t.Fatal(err)
	}
	c, err := tp.JoinGroup("g", 0, 1, isb.ManualCommit(), isb.MaxWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if b, err := c.Pull(ctx); err != nil || len(b.Items) != 1 {
		t.Fatalf("Pull = %v, %v; want 1 item", b.Items, err)
	}
	settle := store.Doubt("g")
	if err := prod.ProduceBatch(ctx, []isbtest.Item{{Seq: 1}, {Seq: 2}}); err != nil {
		t.Fatal(err)
	}
	if b, err := c.Pull(ctx); err != nil || len(b.Items) != 0 {
		t.Fatalf("Pull while the claim is in doubt = %v, %v; want nothing after MaxWait", b.Items, err)
	}
	if err := c.CommitTo(0, 1); err != nil {
		t.Fatalf("CommitTo while the claim is in doubt: %v", err)
	}
	pulled := make(chan isb.Batch[isbtest.Item], 1)
	errs := make(chan error, 1)
	go func() {
		for {
			b, err := c.Pull(ctx)
			if err != nil || len(b.Items) > 0 {
				pulled <- b
				errs <- err
				return
			}
		}
	}()
	select {
	case b := <-pulled:
		t.Fatalf("Pull delivered %v (%v) while the claim was in doubt", b.Items, <-errs)
	case <-time.After(50 * time.Millisecond): // a few MaxWaits: nothing may come
	}
	settle(true)
	b := <-pulled
	if err := <-errs; err != nil || b.Offset != 1 || len(b.Items) != 2 || b.Items[0].Seq != 1 {
		t.Fatalf("Pull once the claim is confirmed = offset %d %v, %v; want offset 1 [seq 1, seq 2]", b.Offset, b.Items, err)
	}
	if off, _ := store.Committed(0, "g"); off != 1 {
		t.Fatalf("store holds commit %d, want 1 (committed while in doubt)", off)
	}

	settle = store.Doubt("g")
	if err := prod.ProduceBatch(ctx, []isbtest.Item{{Seq: 3}}); err != nil {
		t.Fatal(err)
	}
	lost := make(chan error, 1)
	go func() {
		for {
			b, err := c.Pull(context.Background())
			if err != nil || len(b.Items) > 0 {
				lost <- fmt.Errorf("items %v: %w", b.Items, err)
				return
			}
		}
	}()
	settle(false)
	if err := <-lost; !errors.Is(err, isb.ErrClaimLost) {
		t.Fatalf("Pull when the doubt ends in a lost claim = %v, want ErrClaimLost and no items", err)
	}
}

// No storage call runs under the consumer's state lock: while a Pull is
// stuck in a read (the store holds reads, as a server in an outage would),
// commits of the batch delivered before go through, and Close ends the
// stuck read instead of waiting for it.
func TestSharedCommitWhileReadStuck(t *testing.T) {
	ctx := testCtx(t)
	store := isbtest.NewSharedStore[isbtest.Item]()
	tp, err := sharedTopic(t, store, "orders")
	if err != nil {
		t.Fatal(err)
	}
	prod := tp.Producer(nil)
	if err := prod.ProduceBatch(ctx, []isbtest.Item{{Seq: 0}, {Seq: 1}}); err != nil {
		t.Fatal(err)
	}
	c, err := tp.PullConsumer("g", isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pull(ctx); err != nil {
		t.Fatal(err)
	}
	release := store.HoldReads()
	defer release()
	if err := prod.Produce(ctx, isbtest.Item{Seq: 2}); err != nil {
		t.Fatal(err)
	}
	pulled := make(chan error, 1)
	go func() {
		_, err := c.Pull(ctx)
		pulled <- err
	}()
	store.WaitReadHeld(ctx, 1)
	if err := c.CommitTo(0, 2); err != nil {
		t.Fatalf("CommitTo while a Pull is stuck in a read: %v", err)
	}
	if off, _ := store.Committed(0, "g"); off != 2 {
		t.Fatalf("store holds commit %d, want 2", off)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-pulled; !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("Pull stuck in a read when the consumer closed = %v, want ErrClosed", err)
	}
}
