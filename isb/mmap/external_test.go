package mmap_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
	"github.com/runnel-dev/runnel/isb/mmap"
)

// factory makes topics in a fresh directory with 64 KiB segments, so the
// suite's volumes cross many rollovers.
func factory(opts ...mmap.Option) isbtest.Factory {
	return func(t testing.TB, name string, topicOpts ...isb.TopicOption) (*isb.Topic[isbtest.Item], error) {
		tp, err := mmap.NewTopic[isbtest.Item](t.TempDir(), name, append([]mmap.Option{mmap.SegmentSize(64 << 10), mmap.Topic(topicOpts...)}, opts...)...)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() {
			if err := tp.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return tp, nil
	}
}

func TestSuite(t *testing.T) {
	t.Run("Batch", func(t *testing.T) {
		isbtest.Run(t, factory(mmap.Flush(mmap.Batch(100)), mmap.MaxRetainedConsumedSegments(0)))
	})
	t.Run("Immediate", func(t *testing.T) {
		if testing.Short() {
			t.Skip("fsync per append: slow")
		}
		isbtest.Run(t, factory(mmap.Flush(mmap.Immediate())))
	})
}

// A durable topic: items and commits survive a restart.
func ExampleNewTopic() {
	dir, err := os.MkdirTemp("", "mmap-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	opts := []mmap.Option{mmap.Topic(isb.Partitions(1)), mmap.Flush(mmap.Batch(100)), mmap.SegmentSize(1 << 20)}

	topic, err := mmap.NewTopic[string](dir, "orders", opts...)
	if err != nil {
		panic(err)
	}
	prod := topic.Producer(nil)
	for _, o := range []string{"apple", "pear", "plum"} {
		if err := prod.Produce(ctx, o); err != nil {
			panic(err)
		}
	}
	c, _ := topic.PullConsumer("billing", isb.BatchSize(2), isb.ManualCommit())
	b, _ := c.Pull(ctx)
	fmt.Println("first run:", b.Items)
	c.Commit()
	topic.Close()

	// Reopen: the group resumes after its commit.
	topic, err = mmap.NewTopic[string](dir, "orders", opts...)
	if err != nil {
		panic(err)
	}
	defer topic.Close()
	c, _ = topic.PullConsumer("billing")
	b, _ = c.Pull(ctx)
	fmt.Println("after restart:", b.Items, "from offset", b.Offset)
	// Output:
	// first run: [apple pear]
	// after restart: [plum] from offset 2
}

// On an unbounded durable topic nothing is deleted, so a group created
// after another one committed still gets every item, from offset 0, and
// holds capacity for them.
func TestNewGroupStartsAtEarliestRetained(t *testing.T) {
	ctx := context.Background()
	tp, err := mmap.NewTopic[int](t.TempDir(), "nums", mmap.SegmentSize(mmap.MinSegmentSize), mmap.Topic(isb.Capacity(1000)))
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	items := make([]int, 30)
	for i := range items {
		items[i] = i
	}
	if err := tp.Producer(nil).ProduceBatch(ctx, items); err != nil {
		t.Fatal(err)
	}
	a, err := tp.PullConsumer("a", isb.BatchSize(20), isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	b, err := a.Pull(ctx)
	if err != nil || len(b.Items) != 20 {
		t.Fatalf("pull: %v, %v", b.Items, err)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	if u := tp.Used(); u != 10 {
		t.Fatalf("Used() = %d, want 10", u)
	}
	late, err := tp.PullConsumer("late", isb.BatchSize(100))
	if err != nil {
		t.Fatal(err)
	}
	if u := tp.Used(); u != 30 {
		t.Fatalf("Used() = %d after the late group joined, want 30 (it holds every item)", u)
	}
	var got []int
	for len(got) < 30 {
		b, err := late.Pull(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if b.Offset != int64(len(got)) {
			t.Fatalf("late group pulled offset %d, want %d", b.Offset, len(got))
		}
		got = append(got, b.Items...)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("late group item %d = %d", i, v)
		}
	}
	if err := late.Commit(); err != nil {
		t.Fatal(err)
	}
	if u := tp.Used(); u != 10 {
		t.Fatalf("Used() = %d after the late group committed all, want 10 (held by a)", u)
	}
}
