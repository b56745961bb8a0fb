package isb

import "context"

// PullConsumer reads the partitions assigned to it within its group. One
// goroutine at a time may call Pull, Commit and CommitTo; Close may be
// called from any goroutine.
type PullConsumer[T any] struct {
	topic *Topic[T]
	group string
	cfg   consumerConfig
	// TODO(issue 2): assigned partitions, delivered and committed offsets.
}

// Group returns the consumer's group name.
func (c *PullConsumer[T]) Group() string { return c.group }

// Assigned returns the partitions this consumer owns, ascending.
func (c *PullConsumer[T]) Assigned() []int { panic("isb: not implemented") }

// Pull blocks until at least one item is available or ctx ends, and returns
// up to BatchSize items of one partition. Under auto commit it first commits
// the previous batch. The batch is valid until the next Pull or Commit.
func (c *PullConsumer[T]) Pull(ctx context.Context) (Batch[T], error) {
	panic("isb: not implemented")
}

// Commit commits the last pulled batch. After an empty or cancelled pull it
// commits nothing new. It is idempotent.
func (c *PullConsumer[T]) Commit() error { panic("isb: not implemented") }

// CommitTo records that every offset below offset in partition is done. An
// offset at or below the current commit is a no-op; one past what was
// delivered is ErrCommitBeyondDelivered; a partition not owned is ErrNotAssigned.
func (c *PullConsumer[T]) CommitTo(partition int, offset int64) error {
	panic("isb: not implemented")
}

// Close releases the consumer's partitions (the group may be consumed again)
// and wakes a blocked Pull with ErrClosed. It does not commit. Idempotent.
func (c *PullConsumer[T]) Close() error { panic("isb: not implemented") }
