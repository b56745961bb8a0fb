package isb

import (
	"context"
	"sync"
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

func (b *stubBackend) Open(_ string, n int) error {
	for range n {
		b.logs = append(b.logs, &stubLog{})
	}
	return nil
}
func (b *stubBackend) Partition(p int) Log[int] { return b.logs[p] }
func (b *stubBackend) Groups() []string         { return nil }
func (b *stubBackend) DeleteGroup(string) error { return nil }
func (b *stubBackend) Close() error             { return nil }

func (l *stubLog) Append(items []int) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append(l.items, items...)
	return int64(len(l.items) - len(items)), nil
}

func (l *stubLog) Read(off int64, max int, buf []int) ([]int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return buf[:copy(buf[:max], l.items[off:])], nil
}

func (l *stubLog) Head() int64 { return 0 }

func (l *stubLog) Tail() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.items))
}

func (l *stubLog) Commit(string, int64) error     { return nil }
func (l *stubLog) Committed(string) (int64, bool) { return 0, false }
func (l *stubLog) Release(int64) error            { return nil }

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
			if tp.sig.waiters.Load() != 0 {
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
