package isb

import "context"

// Topic is a named, partitioned buffer queue of T. It is safe for
// concurrent use. Create one with a storage package's constructor (for
// example memory.NewTopic) or with NewTopic and a Backend.
type Topic[T any] struct {
	name    string
	cfg     topicConfig
	backend Backend[T]
	// TODO(issue 2): partitions, groups, capacity, signal.
}

// NewTopic validates opts, opens backend for the topic and returns it.
// Storage packages call it; users usually call their constructors.
func NewTopic[T any](name string, backend Backend[T], opts ...TopicOption) (*Topic[T], error) {
	panic("isb: not implemented")
}

// Name returns the topic's name.
func (t *Topic[T]) Name() string { return t.name }

// Partitions returns the number of partitions.
func (t *Topic[T]) Partitions() int { return t.cfg.partitions }

// Producer returns a producer that routes with r; a nil r routes round-robin.
// Producers are cheap and safe for concurrent use.
func (t *Topic[T]) Producer(r Router[T]) *Producer[T] { panic("isb: not implemented") }

// PullConsumers creates n consumers for group, splitting the partitions
// between them. A group that is new starts at the earliest retained item; a
// group with stored commits resumes from them.
func (t *Topic[T]) PullConsumers(group string, n int, opts ...ConsumerOption) ([]*PullConsumer[T], error) {
	panic("isb: not implemented")
}

// PullConsumer creates the single consumer of group, owning every partition.
func (t *Topic[T]) PullConsumer(group string, opts ...ConsumerOption) (*PullConsumer[T], error) {
	panic("isb: not implemented")
}

// Subscribe starts a push consumer group: handler is called with batches by
// Consumers(n) goroutines until Stop.
func (t *Topic[T]) Subscribe(group string, handler func(ctx context.Context, b Batch[T]) error, opts ...ConsumerOption) (*PushConsumer[T], error) {
	panic("isb: not implemented")
}

// Pending returns how many items group has not committed yet, over all
// partitions (everything retained for a group that does not exist yet).
func (t *Topic[T]) Pending(group string) int64 { panic("isb: not implemented") }

// Used returns how many items hold capacity: retained and not committed by
// every known group.
func (t *Topic[T]) Used() int64 { panic("isb: not implemented") }

// Close closes the topic: blocked producers and consumers return ErrClosed,
// then the backend is closed. It is idempotent.
func (t *Topic[T]) Close() error { panic("isb: not implemented") }
