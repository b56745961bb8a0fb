package isb

import "context"

// Producer routes items to the partitions of a topic and appends them. It is
// safe for concurrent use.
type Producer[T any] struct {
	topic  *Topic[T]
	router Router[T]
}

// Produce appends one item. Under FullWait it waits for capacity (until ctx
// ends); under FullFail it returns ErrFull.
func (p *Producer[T]) Produce(ctx context.Context, item T) error { panic("isb: not implemented") }

// ProduceBatch appends items, routing each one. Under FullWait a batch larger
// than the capacity is stored in capacity-sized slices; under FullFail the
// whole batch is rejected with ErrFull when it does not fit.
func (p *Producer[T]) ProduceBatch(ctx context.Context, items []T) error {
	panic("isb: not implemented")
}

// TryProduce appends item if there is capacity now and reports whether it did.
// It never waits for capacity.
func (p *Producer[T]) TryProduce(ctx context.Context, item T) (bool, error) {
	panic("isb: not implemented")
}

// TryProduceBatch appends all of items if there is capacity for all of them
// now and reports whether it did. It never waits for capacity.
func (p *Producer[T]) TryProduceBatch(ctx context.Context, items []T) (bool, error) {
	panic("isb: not implemented")
}
