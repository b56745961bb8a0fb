package isb

import "time"

// FullMode says what a producer does when the topic has no capacity left.
type FullMode int

const (
	// FullWait blocks the producer (cancellable, FIFO admission) until
	// enough capacity is released. A batch larger than the capacity is
	// stored in capacity-sized slices.
	FullWait FullMode = iota
	// FullFail rejects the whole batch with ErrFull.
	FullFail
)

// TopicOption configures a topic. Options are validated once, by NewTopic;
// an invalid one yields an *OptionError naming it.
type TopicOption func(*topicConfig)

type topicConfig struct {
	partitions int
	capacity   int64 // 0: unbounded
	fullMode   FullMode
}

// Partitions sets the number of partitions (default 1, at least 1).
func Partitions(n int) TopicOption { return func(c *topicConfig) { c.partitions = n } }

// Capacity bounds the number of items retained and not yet committed by
// every known group, over all partitions. 0 (the default) is unbounded.
func Capacity(n int64) TopicOption { return func(c *topicConfig) { c.capacity = n } }

// WithFullMode sets what producers do when the topic is full (default FullWait).
func WithFullMode(m FullMode) TopicOption { return func(c *topicConfig) { c.fullMode = m } }

// ConsumerOption configures pull and push consumers.
type ConsumerOption func(*consumerConfig)

type consumerConfig struct {
	batchSize    int
	manualCommit bool
	consumers    int           // push: goroutines (and consumers) in the group
	minBackoff   time.Duration // push, manual commit: first retry delay
	maxBackoff   time.Duration // push, manual commit: retry delay cap
	onError      func(partition int, offset int64, err error)
}

// BatchSize is the most items one Pull returns (default 100, at least 1).
func BatchSize(n int) ConsumerOption { return func(c *consumerConfig) { c.batchSize = n } }

// ManualCommit turns auto commit off: progress moves only with Commit or
// CommitTo (pull), or when the handler returns nil (push).
func ManualCommit() ConsumerOption { return func(c *consumerConfig) { c.manualCommit = true } }

// Consumers sets how many consumers (push: goroutines) a push group runs
// (default 1, at most the partition count).
func Consumers(n int) ConsumerOption { return func(c *consumerConfig) { c.consumers = n } }

// Backoff sets the retry delays of a failing push handler under manual
// commit: min doubles up to max (defaults 10ms and 1s).
func Backoff(min, max time.Duration) ConsumerOption {
	return func(c *consumerConfig) { c.minBackoff, c.maxBackoff = min, max }
}

// OnError is called when a push handler fails: under auto commit the batch
// is then skipped, under manual commit it is retried with backoff.
func OnError(f func(partition int, offset int64, err error)) ConsumerOption {
	return func(c *consumerConfig) { c.onError = f }
}
