package isb_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
)

// TestRecoverFromBackend reopens a topic on storage that kept its data and
// commits: used capacity and groups are recovered.
func TestRecoverFromBackend(t *testing.T) {
	ctx := context.Background()
	b := isbtest.NewSliceBackend[int]()
	tp, err := isb.NewTopic[int]("nums", b, isb.Partitions(2), isb.Capacity(10))
	if err != nil {
		t.Fatal(err)
	}
	pr := tp.Producer(isb.BySelector(func(i, n int) int { return i % n }))
	if err := pr.ProduceBatch(ctx, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}); err != nil {
		t.Fatal(err)
	}
	c, err := tp.PullConsumer("g", isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	bt, err := c.Pull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CommitTo(bt.Partition, 3); err != nil {
		t.Fatal(err)
	}
	if u := tp.Used(); u != 7 {
		t.Fatalf("Used() = %d, want 7", u)
	}
	if err := tp.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pull(ctx); !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("Pull on a closed topic = %v", err)
	}
	c.Close()

	tp, err = isb.NewTopic[int]("nums", b, isb.Partitions(2), isb.Capacity(10))
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	if u, p := tp.Used(), tp.Pending("g"); u != 7 || p != 7 {
		t.Fatalf("after reopening: Used() = %d, Pending(g) = %d; want 7 and 7", u, p)
	}
	pr = tp.Producer(nil)
	if ok, err := pr.TryProduceBatch(ctx, []int{10, 11, 12, 13}); ok || err != nil {
		t.Fatalf("4 more on 3 free = %v, %v; want false, nil", ok, err)
	}
	if ok, err := pr.TryProduceBatch(ctx, []int{10, 11, 12}); !ok || err != nil {
		t.Fatalf("3 more on 3 free = %v, %v; want true, nil", ok, err)
	}
	// The group resumes from its commit; a new group starts where it is.
	c, err = tp.PullConsumer("g")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bt, err = c.Pull(ctx)
	if err != nil || bt.Partition != 0 || bt.Offset != 3 {
		t.Fatalf("resumed at partition %d offset %d (%v), want 0 and 3", bt.Partition, bt.Offset, err)
	}
	if p := tp.Pending("new"); p != 10 {
		t.Fatalf("Pending of a new group = %d, want 10 (from the min commit)", p)
	}
	if b.Opens() != 2 {
		t.Fatalf("backend opened %d times, want 2", b.Opens())
	}
}

// faultyBackend fails the calls of its logs on demand.
type faultyBackend struct {
	*isbtest.SliceBackend[int]
	openErr                       error
	failAppend, failRead, failCmt atomic.Bool
}

var errStorage = errors.New("disk on fire")

func (b *faultyBackend) Open(topic string, n int) (isb.Caps, error) {
	if b.openErr != nil {
		return isb.Caps{}, b.openErr
	}
	return b.SliceBackend.Open(topic, n)
}

func (b *faultyBackend) Partition(p int) isb.Log[int] {
	return faultyLog{b.SliceBackend.Partition(p), b}
}

type faultyLog struct {
	isb.Log[int]
	b *faultyBackend
}

func (l faultyLog) Append(items []int) (isb.Write, error) {
	if l.b.failAppend.Load() {
		return isb.Write{}, errStorage
	}
	return l.Log.Append(items)
}

func (l faultyLog) AppendOne(item int) (isb.Write, error) {
	if l.b.failAppend.Load() {
		return isb.Write{}, errStorage
	}
	return l.Log.AppendOne(item)
}

func (l faultyLog) Read(ctx context.Context, off int64, max int, buf []int) (int64, []int, error) {
	if l.b.failRead.Load() {
		return off, nil, errStorage
	}
	return l.Log.Read(ctx, off, max, buf)
}

func (l faultyLog) Commit(ctx context.Context, g string, off int64) error {
	if l.b.failCmt.Load() {
		return errStorage
	}
	return l.Log.Commit(ctx, g, off)
}

// TestStorageErrors: storage failures reach the caller wrapped with the
// topic and partition, and a failed append gives its capacity back.
func TestStorageErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := isb.NewTopic[int]("t", &faultyBackend{SliceBackend: isbtest.NewSliceBackend[int](), openErr: errStorage}); !errors.Is(err, errStorage) || !strings.Contains(err.Error(), `"t"`) {
		t.Fatalf("NewTopic on failing storage = %v", err)
	}
	if _, err := isb.NewTopic[int]("t", nil); !errors.Is(err, isb.ErrInvalidOption) {
		t.Fatalf("NewTopic with a nil backend = %v", err)
	}

	b := &faultyBackend{SliceBackend: isbtest.NewSliceBackend[int]()}
	tp, err := isb.NewTopic[int]("t", b, isb.Partitions(2), isb.Capacity(4))
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	pr := tp.Producer(nil)
	b.failAppend.Store(true)
	for _, produce := range []func() error{
		func() error { return pr.Produce(ctx, 1) },
		func() error { return pr.ProduceBatch(ctx, []int{1, 2, 3}) },
	} {
		err := produce()
		if !errors.Is(err, errStorage) || !strings.Contains(err.Error(), `topic "t" partition`) {
			t.Fatalf("produce on failing storage = %v, want the storage error with topic and partition", err)
		}
	}
	if u := tp.Used(); u != 0 {
		t.Fatalf("Used() = %d after failed appends, want 0", u)
	}
	b.failAppend.Store(false)
	if ok, err := pr.TryProduceBatch(ctx, []int{1, 2, 3, 4}); !ok || err != nil {
		t.Fatalf("a full-capacity batch after failed appends = %v, %v; capacity leaked", ok, err)
	}

	c, err := tp.PullConsumer("g", isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b.failRead.Store(true)
	if _, err := c.Pull(ctx); !errors.Is(err, errStorage) || !strings.Contains(err.Error(), "offset 0") {
		t.Fatalf("Pull on failing storage = %v, want the storage error with the offset", err)
	}
	b.failRead.Store(false)
	bt, err := c.Pull(ctx)
	if err != nil || bt.Offset != 0 {
		t.Fatalf("Pull after a failed read = %+v, %v; want offset 0 again", bt, err)
	}
	b.failCmt.Store(true)
	if err := c.Commit(); !errors.Is(err, errStorage) {
		t.Fatalf("Commit on failing storage = %v", err)
	}
	if p := tp.Pending("g"); p != 4 {
		t.Fatalf("Pending = %d after a failed commit, want 4", p)
	}
	b.failCmt.Store(false)
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	if p := tp.Pending("g"); p != 4-int64(len(bt.Items)) {
		t.Fatalf("Pending = %d, want %d", p, 4-len(bt.Items))
	}
}

// TestBatchRoutingKeepsOrder: per-item routing inside a batch keeps the
// batch's order within each partition, for round-robin, keyed routers and
// a batch that goes to one partition only.
func TestBatchRoutingKeepsOrder(t *testing.T) {
	ctx := context.Background()
	byNumber := isb.ByNumber(func(i int) int { return i * 7 })
	for _, c := range []struct {
		name   string
		router isb.Router[int]
		want   func(v int) int
	}{
		{"round-robin", nil, func(v int) int { return v % 3 }}, // a fresh producer starts at 0
		{"by number", byNumber, func(v int) int { p, _ := byNumber.Route(v, 3, 0); return p }},
		{"one partition", isb.BySelector(func(int, int) int { return 1 }), func(int) int { return 1 }},
	} {
		tp := newTopic[int](t, "order", isb.Partitions(3))
		var batch []int
		for i := range 50 {
			batch = append(batch, i)
		}
		if err := tp.Producer(c.router).ProduceBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		cons, err := tp.PullConsumer("g", isb.BatchSize(100))
		if err != nil {
			t.Fatal(err)
		}
		var all []int
		for len(all) < len(batch) {
			b, err := cons.Pull(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range b.Items {
				if c.want(v) != b.Partition || (i > 0 && v <= b.Items[i-1]) {
					t.Fatalf("%s: item %d in partition %d at position %d of %v", c.name, v, b.Partition, i, b.Items)
				}
			}
			all = append(all, b.Items...)
		}
		slices.Sort(all)
		if !slices.Equal(all, batch) {
			t.Fatalf("%s: stored %v, want %v", c.name, all, batch)
		}
		cons.Close()
	}
}

// TestRoundRobinSingleItems: one goroutine's items go to partition i mod n,
// with partition counts that are and are not powers of two.
func TestRoundRobinSingleItems(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{1, 2, 3, 4, 5, 8} {
		tp := newTopic[int](t, "rr", isb.Partitions(n))
		pr := tp.Producer(isb.RoundRobin[int]())
		for i := range 4 * n {
			if err := pr.Produce(ctx, i); err != nil {
				t.Fatal(err)
			}
		}
		c, err := tp.PullConsumer("g", isb.BatchSize(100))
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			b, err := c.Pull(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Items) != 4 {
				t.Fatalf("%d partitions: partition %d holds %v, want 4 items", n, b.Partition, b.Items)
			}
			for _, v := range b.Items {
				if v%n != b.Partition {
					t.Fatalf("%d partitions: item %d in partition %d", n, v, b.Partition)
				}
			}
		}
		c.Close()
	}
}

// TestPendingByPartition: what a group has not committed, per partition,
// sums to Pending; a group that does not exist yet has everything retained
// pending (partition 0 released what g committed).
func TestPendingByPartition(t *testing.T) {
	ctx := context.Background()
	tp := newTopic[int](t, "pending", isb.Partitions(3))
	p := tp.Producer(isb.BySelector(func(v, _ int) int { return v % 3 }))
	if err := p.ProduceBatch(ctx, []int{0, 1, 2, 3, 4, 6, 9}); err != nil { // partition 0: 4 items, 1: 2, 2: 1
		t.Fatal(err)
	}
	cons, err := tp.PullConsumer("g", isb.BatchSize(10), isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for delivered := false; !delivered; {
		b, err := cons.Pull(ctx)
		if err != nil {
			t.Fatal(err)
		}
		delivered = b.Partition == 0
	}
	if err := cons.CommitTo(0, 3); err != nil {
		t.Fatal(err)
	}
	if got, want := tp.PendingByPartition("g", nil), []int64{1, 2, 1}; !slices.Equal(got, want) {
		t.Fatalf("PendingByPartition(g) = %v, want %v", got, want)
	}
	if got := tp.Pending("g"); got != 4 {
		t.Fatalf("Pending(g) = %d, want 4", got)
	}
	if got, want := tp.PendingByPartition("other", []int64{-1}), []int64{-1, 1, 2, 1}; !slices.Equal(got, want) {
		t.Fatalf("PendingByPartition(other) appended %v, want %v", got, want)
	}
}
