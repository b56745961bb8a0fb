package forwarder

import (
	"context"
	"time"

	"github.com/runnel-dev/runnel/vertex"
)

// The writer's appends to one edge: to the next partition or by key,
// waiting or discarding when the buffer is full, and the watermarks of
// what was written.

// writeEdge writes sel to e; with stage, a write that e can stage is left
// in buf.staged for Complete.
func (w *Writer[T]) writeEdge(ctx context.Context, e *edgeWriter[T], sel []vertex.Message[T], buf *WriteBuffer[T], stage bool) error {
	if e.byKey != nil {
		return w.produceKeyed(ctx, e, sel, buf)
	}
	p := 0
	if e.parts > 1 {
		p = int(e.next.Add(1) % uint64(e.parts))
	}
	if stage && e.stages() {
		pending, err := e.prod.StageTo(ctx, p, sel)
		if err != nil {
			return err
		}
		buf.staged = append(buf.staged, stagedWrite[T]{e: e, part: p, n: len(sel), pending: pending})
		return nil
	}
	return w.produce(ctx, e, p, sel)
}

// produce appends items to partition p of e, waiting for room or
// discarding what does not fit, as e.Discard says.
func (w *Writer[T]) produce(ctx context.Context, e *edgeWriter[T], p int, items []vertex.Message[T]) error {
	written := len(items)
	last, ok, err := int64(-1), true, error(nil)
	if e.Discard {
		last, ok, err = e.prod.TryProduceTo(ctx, p, items)
		if err != nil {
			return err
		}
		if !ok {
			// Keep what fits, in order, and discard the latest rest.
			written = 0
			for k := range items {
				l, ok, err := e.prod.TryProduceTo(ctx, p, items[k:k+1])
				if err != nil {
					return err
				}
				if !ok {
					break
				}
				last = l
				written++
			}
		}
	} else if last, err = e.prod.ProduceTo(ctx, p, items); err != nil {
		return err
	}
	w.wrote(e, len(items), written)
	if written > 0 {
		w.publish(e, p, last, w.watermark())
	}
	return nil
}

// produceKeyed appends items to e routed by their keys, waiting for room
// or discarding what does not fit, as e.Discard says.
func (w *Writer[T]) produceKeyed(ctx context.Context, e *edgeWriter[T], items []vertex.Message[T], buf *WriteBuffer[T]) error {
	if len(buf.last) != e.parts {
		buf.last = make([]int64, e.parts)
		buf.one = make([]int64, e.parts)
	}
	last, written := buf.last, len(items)
	if e.Discard {
		ok, err := e.byKey.TryProduceBatchLast(ctx, items, last)
		if err != nil {
			return err
		}
		if !ok {
			// Keep what fits, in order, and discard the latest rest.
			written = 0
			for k := range items {
				ok, err := e.byKey.TryProduceBatchLast(ctx, items[k:k+1], buf.one)
				if err != nil {
					return err
				}
				if !ok {
					break
				}
				for p, l := range buf.one {
					last[p] = max(last[p], l)
				}
				written++
			}
		}
	} else if err := e.byKey.ProduceBatchLast(ctx, items, last); err != nil {
		return err
	}
	w.wrote(e, len(items), written)
	wm := w.watermark()
	for p, l := range last {
		if l >= 0 {
			w.publish(e, p, l, wm)
		}
	}
	return nil
}

// wrote counts written of n messages to e as written and the rest as
// dropped (e discards when full and had no room for them).
func (w *Writer[T]) wrote(e *edgeWriter[T], n, written int) {
	w.counters.written.Add(int64(written))
	if c := e.Counters; c != nil {
		c.written.Add(int64(written))
	}
	if n > written {
		w.counters.drop(reasonFull, n-written)
		w.reportDrop(DropFull, n-written)
		if c := e.Counters; c != nil {
			c.discarded.Add(int64(n - written))
		}
	}
}

// publish tells the watermark publisher that partition p of e was written
// up to offset last, with the replica's watermark wm.
func (w *Writer[T]) publish(e *edgeWriter[T], p int, last int64, wm time.Time) {
	if w.pub == nil {
		return
	}
	w.pub.Publish(e.To, p, last, wm)
}
