package memory_test

import (
	"context"
	"fmt"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/memory"
)

// A topic in memory with one producer and one pull consumer group.
func ExampleNewTopic() {
	ctx := context.Background()
	topic, err := memory.NewTopic[string]("greetings", isb.Partitions(1))
	if err != nil {
		panic(err)
	}
	defer topic.Close()

	if err := topic.Producer(nil).ProduceBatch(ctx, []string{"hello", "hej", "hola"}); err != nil {
		panic(err)
	}
	c, err := topic.PullConsumer("printer", isb.BatchSize(10))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	b, err := c.Pull(ctx)
	if err != nil {
		panic(err)
	}
	// b.Items aliases the topic's storage: use it before the next Pull or Commit.
	fmt.Println(b.Partition, b.Offset, b.Items)
	// Output: 0 0 [hello hej hola]
}

// Storage options go to New; the backend is then handed to isb.NewTopic
// with the topic's options.
func ExampleNew() {
	ctx := context.Background()
	b, err := memory.New[int](memory.SegmentSize(2))
	if err != nil {
		panic(err)
	}
	topic, err := isb.NewTopic("numbers", b, isb.Capacity(100))
	if err != nil {
		panic(err)
	}
	defer topic.Close()

	if err := topic.Producer(nil).ProduceBatch(ctx, []int{1, 2, 3}); err != nil {
		panic(err)
	}
	c, err := topic.PullConsumer("sum", isb.BatchSize(10))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	for range 2 { // a pull never crosses a segment: [1 2], then [3]
		batch, err := c.Pull(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Println(batch.Offset, batch.Items)
	}
	// Output:
	// 0 [1 2]
	// 2 [3]
}
