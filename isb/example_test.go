package isb_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
)

// A topic on the reference slice backend: produce, pull, commit. A storage
// package's constructor (such as memory.NewTopic) replaces NewTopic and the
// backend in real code.
func ExampleNewTopic() {
	ctx := context.Background()
	topic, err := isb.NewTopic[string]("words", isbtest.NewSliceBackend[string](), isb.Partitions(2), isb.Capacity(100))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer topic.Close()

	producer := topic.Producer(nil) // round-robin
	if err := producer.ProduceBatch(ctx, []string{"a", "b", "c", "d"}); err != nil {
		fmt.Println(err)
		return
	}

	consumer, err := topic.PullConsumer("printer", isb.ManualCommit())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer consumer.Close()
	for range 2 {
		b, err := consumer.Pull(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("partition %d offset %d: %v\n", b.Partition, b.Offset, b.Items)
		if err := consumer.CommitTo(b.Partition, b.End()); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Println("used:", topic.Used())
	// Output:
	// partition 0 offset 0: [a c]
	// partition 1 offset 0: [b d]
	// used: 0
}

// Routing by a string key: the same key always goes to the same partition.
func ExampleByString() {
	type order struct{ Customer, Item string }
	router := isb.ByString(func(o order) string { return o.Customer })
	for _, o := range []order{{"ann", "tea"}, {"bob", "jam"}, {"ann", "bun"}} {
		p, _ := router.Route(o, 8, 0)
		fmt.Println(o.Customer, o.Item, "-> partition", p)
	}
	// Output:
	// ann tea -> partition 0
	// bob jam -> partition 4
	// ann bun -> partition 0
}

// Routing by a numeric key: keys 1..n go to partitions 0..n-1.
func ExampleByNumber() {
	router := isb.ByNumber(func(k int) int { return k })
	for _, k := range []int{1, 2, 3, 4, 0, -1} {
		p, _ := router.Route(k, 3, 0)
		fmt.Printf("key %d -> partition %d\n", k, p)
	}
	_, err := isb.ByNumber(func(k float64) float64 { return k }).Route(1.5, 3, 0)
	fmt.Println(err)
	// Output:
	// key 1 -> partition 0
	// key 2 -> partition 1
	// key 3 -> partition 2
	// key 4 -> partition 0
	// key 0 -> partition 2
	// key -1 -> partition 1
	// isb: invalid routing key: numeric key 1.5 is not a finite integer
}

// A push consumer: two goroutines call the handler; Stop waits for them.
func ExampleTopic_Subscribe() {
	ctx := context.Background()
	topic, err := isb.NewTopic[int]("numbers", isbtest.NewSliceBackend[int](), isb.Partitions(2))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer topic.Close()

	var mu sync.Mutex
	var seen []int
	var wg sync.WaitGroup
	wg.Add(6)
	push, err := topic.Subscribe("sum", func(ctx context.Context, b isb.Batch[int]) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, b.Items...) // copy: the batch is valid only during the call
		for range b.Items {
			wg.Done()
		}
		return nil
	}, isb.Consumers(2), isb.ManualCommit())
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := topic.Producer(nil).ProduceBatch(ctx, []int{1, 2, 3, 4, 5, 6}); err != nil {
		fmt.Println(err)
		return
	}
	wg.Wait()
	if err := push.Stop(); err != nil {
		fmt.Println(err)
		return
	}
	slices.Sort(seen)
	fmt.Println(seen, "pending:", topic.Pending("sum"))
	// Output: [1 2 3 4 5 6] pending: 0
}

// A registry finds a topic's producer by name and element type.
func ExampleRegistry() {
	var registry isb.Registry
	topic, err := isb.NewTopic[string]("greetings", isbtest.NewSliceBackend[string]())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer topic.Close()
	if err := isb.Register(&registry, topic); err != nil {
		fmt.Println(err)
		return
	}
	producer, err := isb.ProducerOf[string](&registry, "greetings")
	fmt.Println(producer != nil, err)
	_, err = isb.ProducerOf[int](&registry, "greetings")
	fmt.Println(err)
	_, err = isb.ProducerOf[string](&registry, "farewells")
	fmt.Println(strings.TrimSpace(err.Error()))
	// Output:
	// true <nil>
	// isb: topic "greetings" holds string, not int
	// isb: unknown topic: "farewells"
}

// A group's consumers split the partitions: contiguous ranges, the extra
// partitions to the first consumers.
func ExampleTopic_PullConsumers() {
	topic, err := isb.NewTopic[int]("jobs", isbtest.NewSliceBackend[int](), isb.Partitions(5))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer topic.Close()
	consumers, err := topic.PullConsumers("workers", 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, c := range consumers {
		fmt.Println("consumer", i, "owns", c.Assigned())
		defer c.Close()
	}
	_, err = topic.PullConsumers("workers", 1)
	fmt.Println(err)
	_, err = topic.PullConsumers("others", 6)
	fmt.Println(err)
	// Output:
	// consumer 0 owns [0 1 2]
	// consumer 1 owns [3 4]
	// isb: consumer group already has consumers: group "workers" of topic "jobs" (partition 0 is read by an open consumer)
	// isb: option Consumers: must be between 1 and the partition count 5 (got 6)
}

// An abandoned group holds capacity until it is deleted: here "audit"
// stopped consuming, so the topic is full although "billing" is done.
func ExampleTopic_DeleteGroup() {
	ctx := context.Background()
	topic, err := isb.NewTopic[string]("orders", isbtest.NewSliceBackend[string](), isb.Capacity(2), isb.WithFullMode(isb.FullFail))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer topic.Close()
	audit, _ := topic.PullConsumer("audit")
	audit.Close() // abandoned: never consumes
	billing, _ := topic.PullConsumer("billing", isb.ManualCommit())
	defer billing.Close()

	producer := topic.Producer(nil)
	producer.ProduceBatch(ctx, []string{"apple", "pear"})
	b, _ := billing.Pull(ctx)
	billing.Commit()
	fmt.Println("billing read", b.Items, "- used:", topic.Used())
	fmt.Println("produce:", producer.Produce(ctx, "plum"))

	fmt.Println("delete audit:", topic.DeleteGroup("audit"))
	fmt.Println("used:", topic.Used(), "- produce:", producer.Produce(ctx, "plum"))
	fmt.Println("delete again:", topic.DeleteGroup("audit"))
	// Output:
	// billing read [apple pear] - used: 2
	// produce: isb: topic is full
	// delete audit: <nil>
	// used: 0 - produce: <nil>
	// delete again: isb: unknown consumer group: group "audit" of topic "orders"
}
