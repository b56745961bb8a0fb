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
	total := int64(len(items))
	if t.gate == nil {
		last, err := t.appendRunAt(partition, items, total)
		return last, err == nil, err
	}
	capacity := t.cfg.capacity
	if total <= capacity || mode != admitWait {
		if total > capacity {
			if mode == admitTry {
				return -1, false, nil
			}
			return -1, false, fmt.Errorf("%w: batch of %d items exceeds the capacity %d of topic %q", ErrFull, total, capacity, t.name)
		}
		if ok, err := t.admit(ctx, total, mode); !ok || err != nil {
			return -1, false, err
		}
		last, err := t.appendRunAt(partition, items, total)
		return last, err == nil, err
	}
	// FullWait and larger than the capacity: capacity-sized slices, each
	// admitted in turn, as ProduceBatch does.
	last := int64(-1)
	for start := int64(0); start < total; start += capacity {
		end := min(start+capacity, total)
		if err := t.gate.acquire(ctx, end-start); err != nil {
			return last, false, err
		}
		l, err := t.appendRunAt(partition, items[start:end], end-start)
		if err != nil {
			return last, false, err
		}
		last = l
	}
	return last, true, nil
}

// appendRunAt is appendRun that also returns the offset of the last item
// of run, which appendRun does not report, and always wakes readers (run
// goes to one partition, so there is exactly one wake-up per call). On
// error it releases rest units of capacity.
func (t *Topic[T]) appendRunAt(part int, run []T, rest int64) (int64, error) {
	pt := t.parts[part]
	pt.mu.Lock()
	var (
		first int64
		err   error
	)
	if t.closed.Load() { // under the lock: see Close
		err = ErrClosed
	} else if first, err = pt.log.Append(run); err != nil {
		err = t.appendErr(part, err)
	}
	pt.mu.Unlock()
	if err != nil {
		if t.gate != nil {
			t.gate.release(rest)
		}
		return -1, err
	}
	t.sig.notify()
	return first + int64(len(run)) - 1, nil
}
