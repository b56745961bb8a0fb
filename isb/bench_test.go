package isb_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/runnel-dev/runnel/isb"
)

// These benchmarks check the core's own cost and allocations on a backend
// that stores nothing; isb/memory owns the real benchmark table.

// nullBackend stores nothing: Append moves the tail and Read returns zero
// values, so the benchmarks measure the core alone.
type nullBackend struct {
	logs []*nullLog
	fill int64 // items each partition holds at open
}

type nullLog struct {
	tail, head atomic.Int64
	commit     atomic.Int64
}

func (b *nullBackend) Open(_ string, n int) (isb.Caps, error) {
	for range n {
		l := new(nullLog)
		l.tail.Store(b.fill)
		b.logs = append(b.logs, l)
	}
	return isb.Caps{}, nil
}
func (b *nullBackend) Partition(p int) isb.Log[int]           { return b.logs[p] }
func (b *nullBackend) Groups() ([]string, error)              { return nil, nil }
func (b *nullBackend) DeleteGroup(string) error               { return nil }
func (b *nullBackend) Claim(string, []int) (isb.Lease, error) { return isb.NoLease, nil }
func (b *nullBackend) Close() error                           { return nil }

func (l *nullLog) Append(items []int) (isb.Write, error) {
	return isb.Completed(l.tail.Add(int64(len(items))) - 1), nil
}
func (l *nullLog) AppendOne(int) (isb.Write, error) {
	return isb.Completed(l.tail.Add(1) - 1), nil
}
func (l *nullLog) Read(_ context.Context, off int64, max int, buf []int) (int64, []int, error) {
	return off, buf[:min(int64(max), l.tail.Load()-off)], nil
}
func (l *nullLog) Head() int64                { return l.head.Load() }
func (l *nullLog) Tail() int64                { return l.tail.Load() }
func (l *nullLog) Count(from, to int64) int64 { return to - from }
func (l *nullLog) Commit(_ context.Context, _ string, off int64) error {
	l.commit.Store(off)
	return nil
}
func (l *nullLog) Committed(string) (int64, bool, error) {
	return l.commit.Load(), l.commit.Load() > 0, nil
}
func (l *nullLog) Release(off int64) error {
	l.head.Store(off)
	return nil
}
func (l *nullLog) Watch(func()) {}
func (l *nullLog) Seal()        {}

func benchTopic(b *testing.B, opts ...isb.TopicOption) *isb.Topic[int] {
	tp, err := isb.NewTopic[int]("bench", &nullBackend{}, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tp.Close() })
	return tp
}

func BenchmarkProduce(b *testing.B) {
	tp := benchTopic(b, isb.Partitions(2))
	pr := tp.Producer(nil)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := pr.Produce(ctx, 1); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkProduceBatch100(b *testing.B) {
	tp := benchTopic(b, isb.Partitions(2))
	pr := tp.Producer(isb.ByNumber(func(i int) int { return i }))
	batch := make([]int, 100)
	for i := range batch {
		batch[i] = i
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := pr.ProduceBatch(ctx, batch); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkProduceBounded(b *testing.B) {
	tp := benchTopic(b, isb.Partitions(2), isb.Capacity(1<<40))
	pr := tp.Producer(nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := pr.Produce(ctx, 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPullCommit100(b *testing.B) {
	tp := benchTopic(b, isb.Partitions(2))
	pr := tp.Producer(nil)
	ctx := context.Background()
	c, err := tp.PullConsumer("g", isb.BatchSize(100))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	batch := make([]int, 200)
	b.ReportAllocs()
	for b.Loop() {
		if err := pr.ProduceBatch(ctx, batch); err != nil {
			b.Fatal(err)
		}
		for range 2 {
			if _, err := c.Pull(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkProduceBatch100RoundRobin(b *testing.B) {
	tp := benchTopic(b, isb.Partitions(2))
	pr := tp.Producer(nil)
	batch := make([]int, 100)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := pr.ProduceBatch(ctx, batch); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkChannelSend is the baseline of BenchmarkProduce: a buffered
// channel drained by one goroutine.
func BenchmarkChannelSend(b *testing.B) {
	ch := make(chan int, 8192)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range ch {
		}
	}()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ch <- 1
		}
	})
	close(ch)
	<-done
}

// BenchmarkPull1000 is the core's cost per batch of a drain: auto commit of
// the previous batch, finding a partition, and the Read call.
func BenchmarkPull1000(b *testing.B) {
	tp, err := isb.NewTopic[int]("bench", &nullBackend{fill: 1 << 50}, isb.Partitions(2))
	if err != nil {
		b.Fatal(err)
	}
	defer tp.Close()
	c, err := tp.PullConsumer("g", isb.BatchSize(1000))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Pull(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkProduceTo100(b *testing.B) {
	tp := benchTopic(b, isb.Partitions(2), isb.Capacity(1<<40))
	pr := tp.Producer(nil)
	batch := make([]int, 100)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := pr.ProduceTo(ctx, i&1, batch); err != nil {
			b.Fatal(err)
		}
	}
}
