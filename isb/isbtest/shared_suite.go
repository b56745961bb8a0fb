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

// SharedStorage is storage several processes share (JetStream, or the
// SharedStore double), for RunShared.
type SharedStorage struct {
	// Open opens topic "orders" with opts on the storage, as one more
	// process would (its own Backend, and for remote storage its own
	// connection), and closes it at t's cleanup.
	Open func(t testing.TB, opts ...isb.TopicOption) (*isb.Topic[Item], error)
	// Sparse: as Storage.Sparse.
	Sparse bool
}

// SharedFactory makes fresh shared storage. With limit > 0 the storage
// enforces its own limit: a partition holds at most limit items not
// committed by every group, and refuses more with an error matching
// isb.ErrFull.
type SharedFactory func(t testing.TB, limit int64) SharedStorage

// RunShared runs the behaviour of storage shared by processes, every
// "process" a topic of its own on the same storage: a blocked Pull wakes
// on another process's append, members of one group in different
// processes split the partitions and resume from each other's commits,
// producers of two processes and one group split over them count every
// item exactly once, and the storage's own limit makes FullFail fail and
// FullWait wait for another process's commit.
func RunShared(t *testing.T, f SharedFactory) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, SharedFactory)
	}{
		{"PullWakesOnOtherProcess", sharedPullWakes},
		{"MembersSplitPartitions", sharedMembers},
		{"ProducersAndMembersInTwoProcesses", sharedTwoProcesses},
		{"StorageLimit", sharedLimit},
	} {
		t.Run(c.name, func(t *testing.T) {
			suite{sparse: f(t, 0).Sparse}.mark(t)
			c.run(t, f)
		})
	}
}

func (s SharedStorage) open(t *testing.T, opts ...isb.TopicOption) *isb.Topic[Item] {
	t.Helper()
	tp, err := s.Open(t, opts...)
	if err != nil {
		t.Fatalf("open a topic instance: %v", err)
	}
	return tp
}

func sharedPullWakes(t *testing.T, f SharedFactory) {
	ctx := testContext(t)
	s := f(t, 0)
	a, b := s.open(t, isb.Partitions(2)), s.open(t, isb.Partitions(2))
	c := consumer(t, a, "g")
	type result struct {
		b   isb.Batch[Item]
		err error
	}
	pulled := make(chan result, 1)
	go func() {
		bt, err := c.Pull(ctx)
		bt.Items = slices.Clone(bt.Items)
		pulled <- result{bt, err}
	}()
	select {
	case r := <-pulled:
		t.Fatalf("Pull returned %v, %v from an empty topic", r.b, r.err)
	case <-time.After(quiet):
	}
	if _, err := b.Producer(nil).ProduceTo(ctx, 1, []Item{{Producer: 9, Seq: 1}}); err != nil {
		t.Fatal(err)
	}
	r := <-pulled
	if r.err != nil || r.b.Partition != 1 || r.b.Offset != 0 || !slices.Equal(r.b.Items, []Item{{Producer: 9, Seq: 1}}) {
		t.Fatalf("Pull = partition %d offset %d %v, %v; want partition 1 offset 0 [{9 1}]", r.b.Partition, r.b.Offset, r.b.Items, r.err)
	}
}

// readN pulls until it has n items, commits, and returns them by partition.
func readN(t *testing.T, ctx context.Context, c *isb.PullConsumer[Item], n int) map[int][]int {
	t.Helper()
	got := map[int][]int{}
	for total := 0; total < n; {
		bt := pull(t, ctx, c)
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

func sharedMembers(t *testing.T, f SharedFactory) {
	ctx := testContext(t)
	s := f(t, 0)
	opts := []isb.TopicOption{isb.Partitions(3)}
	a, b := s.open(t, opts...), s.open(t, opts...)
	if err := a.Producer(nil).ProduceBatch(ctx, seqs(1, 0, 9)); err != nil { // round-robin: 3 per partition
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
		t.Fatalf("member 0 joining again in the other process: %v; want ErrGroupInUse", err)
	}
	if got := readN(t, ctx, m0, 6); len(got) != 2 || !slices.Equal(got[0], []int{0, 3, 6}) || !slices.Equal(got[1], []int{1, 4, 7}) {
		t.Fatalf("member 0 read %v; want partitions 0 and 1 only, 3 items each", got)
	}
	if got := readN(t, ctx, m1, 3); len(got) != 1 || !slices.Equal(got[2], []int{2, 5, 8}) {
		t.Fatalf("member 1 read %v; want partition 2 only", got)
	}
	// A process opened now recovers the group's commits from storage.
	if n := s.open(t, opts...).Pending("g"); n != 0 {
		t.Fatalf("a new process sees %d items pending for g; want 0 (everything committed)", n)
	}
	// Member 1 leaves; a third process appends to its partition; member 1
	// rejoins in process a, which never read partition 2: it resumes from
	// the commit kept in storage.
	if err := m1.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.open(t, opts...).Producer(nil).ProduceTo(ctx, 2, []Item{{Producer: 2, Seq: 100}}); err != nil {
		t.Fatal(err)
	}
	m1a, err := a.JoinGroup("g", 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer m1a.Close()
	bt := pull(t, ctx, m1a)
	if bt.Partition != 2 || !atOffset(t, bt.Offset, 3) || !slices.Equal(bt.Items, []Item{{Producer: 2, Seq: 100}}) {
		t.Fatalf("rejoined member 1 pulled partition %d offset %d %v; want partition 2 offset 3 [seq 100]", bt.Partition, bt.Offset, bt.Items)
	}
	m0.Close()
}

// sharedTwoProcesses: producers in two processes, one group split over
// the two by membership; every item is read exactly once, by one member.
func sharedTwoProcesses(t *testing.T, f SharedFactory) {
	ctx := testContext(t)
	s := f(t, 0)
	const perProducer = 300
	opts := []isb.TopicOption{isb.Partitions(4)}
	procs := []*isb.Topic[Item]{s.open(t, opts...), s.open(t, opts...)}
	members := make([]*isb.PullConsumer[Item], 2)
	for i, tp := range procs {
		m, err := tp.JoinGroup("g", i, 2, isb.BatchSize(16))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		members[i] = m
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i, tp := range procs {
		wg.Go(func() {
			pr := tp.Producer(nil)
			for seq := 0; seq < perProducer; {
				n := min(1+seq%7, perProducer-seq)
				if err := pr.ProduceBatch(ctx, seqs(i, seq, n)); err != nil {
					errs <- err
					return
				}
				seq += n
			}
		})
	}
	var mu sync.Mutex
	var all []Item
	readBy := map[Item]int{}
	var read sync.WaitGroup
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	for i, m := range members {
		read.Go(func() {
			for {
				bt, err := m.Pull(stop)
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						errs <- err
					}
					return
				}
				mu.Lock()
				for _, it := range bt.Items {
					all = append(all, it)
					readBy[it] |= 1 << i
				}
				done := len(all) >= 2*perProducer
				mu.Unlock()
				if done {
					cancel()
				}
			}
		})
	}
	wg.Wait()
	read.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkExactlyOnce(t, "group g over two processes", all, 2, perProducer)
	for it, by := range readBy {
		if by != 1 && by != 2 {
			t.Fatalf("item %v read by both members", it)
		}
	}
}

func sharedLimit(t *testing.T, f SharedFactory) {
	ctx := testContext(t)
	s := f(t, 2)
	failing := s.open(t, isb.WithFullMode(isb.FullFail))
	waiting := s.open(t)
	reader := s.open(t)
	c, err := reader.JoinGroup("g", 0, 1, isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := failing.Producer(nil).ProduceBatch(ctx, []Item{{Seq: 0}, {Seq: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := failing.Producer(nil).Produce(ctx, Item{Seq: 2}); !errors.Is(err, isb.ErrFull) {
		t.Fatalf("FullFail produce into full storage: %v; want ErrFull", err)
	}
	// Another process learns of the two items within a bounded time (a
	// wake-up by storage); from then on it finds the storage full too.
	waitFor(t, ctx, "the other process to see both items", func() bool { return waiting.Used() >= 2 })
	if ok, err := waiting.Producer(nil).TryProduce(ctx, Item{Seq: 99}); ok || err != nil {
		t.Fatalf("TryProduce into full storage = %v, %v; want false, nil", ok, err)
	}
	done := make(chan error, 1)
	go func() { done <- waiting.Producer(nil).Produce(ctx, Item{Seq: 2}) }()
	select {
	case err := <-done:
		t.Fatalf("FullWait produce returned %v while storage is full", err)
	case <-time.After(quiet):
	}
	bt := pull(t, ctx, c)
	if len(bt.Items) != 2 {
		t.Fatalf("Pull = %v; want 2 items", bt.Items)
	}
	if err := c.CommitTo(0, 1); err != nil { // room for one
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("FullWait produce after a commit made room: %v", err)
	}
	bt = pull(t, ctx, c)
	if !atOffset(t, bt.Offset, 2) || !slices.Equal(bt.Items, []Item{{Seq: 2}}) {
		t.Fatalf("Pull = offset %d %v; want offset 2 [seq 2]", bt.Offset, bt.Items)
	}
}
