package isb

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stubBackend is a minimal in-package Backend (package isb's own tests
// cannot import isbtest, which imports isb).
type stubBackend struct{ logs []*stubLog }

type stubLog struct {
	mu    sync.Mutex
	items []int
}

func (b *stubBackend) Open(_ string, n int) (Caps, error) {
	for range n {
		b.logs = append(b.logs, &stubLog{})
	}
	return Caps{}, nil
}
func (b *stubBackend) Partition(p int) Log[int]           { return b.logs[p] }
func (b *stubBackend) Groups() ([]string, error)          { return nil, nil }
func (b *stubBackend) DeleteGroup(string) error           { return nil }
func (b *stubBackend) Claim(string, []int) (Lease, error) { return NoLease, nil }
func (b *stubBackend) Close() error                       { return nil }

func (l *stubLog) Append(items []int) (Write, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append(l.items, items...)
	return Completed(int64(len(l.items) - 1)), nil
}

func (l *stubLog) AppendOne(item int) (Write, error) { return l.Append([]int{item}) }
func (l *stubLog) Watch(func())                      {}
func (l *stubLog) Seal()                             {}

func (l *stubLog) Read(_ context.Context, off int64, max int, buf []int) (int64, []int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return off, buf[:copy(buf[:max], l.items[off:])], nil
}

func (l *stubLog) Head() int64 { return 0 }

func (l *stubLog) Tail() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.items))
}

func (l *stubLog) Count(from, to int64) int64 { return to - from }

func (l *stubLog) Commit(context.Context, string, int64) error { return nil }
func (l *stubLog) Committed(string) (int64, bool, error)       { return 0, false, nil }
func (l *stubLog) Release(int64) error                         { return nil }

// TestPullSeesProduceBeforeArm produces in the window between Pull's empty
// read and its arming of the signal, where notify finds no waiter: the
// re-check after arming must find the item instead of waiting forever.
func TestPullSeesProduceBeforeArm(t *testing.T) {
	tp, err := NewTopic[int]("signal", &stubBackend{})
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	c, err := tp.PullConsumer("g")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	produced := false
	testHookBeforeArm = func() {
		if !produced {
			produced = true
			if tp.parts[0].waiters.n.Load() != 0 {
				t.Error("a waiter is armed before arm")
			}
			if err := tp.Producer(nil).Produce(ctx, 42); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { testHookBeforeArm = nil }()
	b, err := c.Pull(ctx)
	if err != nil || len(b.Items) != 1 || b.Items[0] != 42 {
		t.Fatalf("Pull = %+v, %v; want the item produced before arming", b, err)
	}
	if !produced {
		t.Fatal("the hook never ran: Pull did not wait")
	}
}

// TestWakeUpsArePerPartition: appends to one partition do not wake a
// consumer waiting on another. The consumer of partition 0 arms exactly
// once while 100 produces go to partition 1, then the produce to its own
// partition wakes it.
func TestWakeUpsArePerPartition(t *testing.T) {
	tp, err := NewTopic[int]("wake", &stubBackend{}, Partitions(2))
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	cs, err := tp.PullConsumers("g", 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		defer c.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var arms atomic.Int32
	testHookBeforeArm = func() { arms.Add(1) }
	defer func() { testHookBeforeArm = nil }()
	pulled := make(chan Batch[int], 1)
	go func() {
		b, err := cs[0].Pull(ctx)
		if err != nil {
			t.Error(err)
		}
		pulled <- b
	}()
	for tp.parts[0].waiters.n.Load() != 1 {
		if ctx.Err() != nil {
			t.Fatal("the consumer of partition 0 never waited")
		}
		time.Sleep(time.Millisecond)
	}
	pr := tp.Producer(nil)
	for i := range 100 {
		if _, err := pr.ProduceTo(ctx, 1, []int{i}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pr.ProduceTo(ctx, 0, []int{7}); err != nil {
		t.Fatal(err)
	}
	b := <-pulled
	if b.Partition != 0 || len(b.Items) != 1 || b.Items[0] != 7 {
		t.Fatalf("Pull = %+v; want item 7 of partition 0", b)
	}
	if n := arms.Load(); n != 1 {
		t.Fatalf("the consumer of partition 0 armed %d times; want 1 (woken by partition 1's appends)", n)
	}
	if n := tp.parts[0].waiters.n.Load() + tp.parts[1].waiters.n.Load(); n != 0 {
		t.Fatalf("%d waiters still registered after the Pull", n)
	}
}
