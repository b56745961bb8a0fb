package isb

import (
	"context"
	"fmt"
)

// ProduceTo appends items to one given partition, bypassing the producer's
// router, and returns the offset of the last item stored. Capacity is
// admitted as ProduceBatch admits it (under FullWait a batch larger than the
// capacity is stored in capacity-sized slices; under FullFail a batch that
// does not fit is rejected with ErrFull). A caller that must know exactly
// where its items went (the watermark publisher records the offset of each
// write) uses it instead of ProduceBatch with a fixed router, whose offsets
// it could only guess from Tail while other producers append.
//
// With no items it returns -1 and nil. On error, last is the offset of the
// last item already stored (FullWait slices before a cancellation) or -1.
func (p *Producer[T]) ProduceTo(ctx context.Context, partition int, items []T) (last int64, err error) {
	last, _, err = p.produceTo(ctx, partition, items, p.mode())
	return last, err
}

// TryProduceTo appends all of items to partition if there is capacity for
// all of them now, and reports whether it did and the offset of the last
// item stored. It never waits for capacity.
func (p *Producer[T]) TryProduceTo(ctx context.Context, partition int, items []T) (last int64, ok bool, err error) {
	return p.produceTo(ctx, partition, items, admitTry)
}

func (p *Producer[T]) produceTo(ctx context.Context, partition int, items []T, mode admission) (int64, bool, error) {
	if err := ctx.Err(); err != nil {
		return -1, false, err
	}
	t := p.topic
	if partition < 0 || partition >= t.cfg.partitions {
		return -1, false, fmt.Errorf("%w: partition %d of topic %q, want 0 <= p < %d", ErrInvalidKey, partition, t.name, t.cfg.partitions)
	}
	if t.closed.Load() {
		return -1, false, ErrClosed
	}
	if len(items) == 0 {
		return -1, true, nil
	}
	return admitStore(ctx, t, int64(len(items)), mode, false, partitionStore[T]{ctx, mode, t, partition, items})
}

// partitionStore stores a slice of a batch in one partition.
type partitionStore[T any] struct {
	ctx   context.Context
	mode  admission
	t     *Topic[T]
	part  int
	items []T
}

func (b partitionStore[T]) store(start, end int64, _ int) (int64, error) {
	return b.t.appendRun(b.ctx, b.mode, b.part, b.items[start:end], end-start)
}
