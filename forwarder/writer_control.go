package forwarder

import (
	"context"
	"fmt"
	"time"

	"github.com/runnel-dev/runnel/vertex"
)

// Control messages (idle markers) and the writer's idle loop.

// WriteControl appends one control message (tagged ControlTag, which
// readers ack and skip) to partition of the edge to vertex to, and returns
// its offset. The watermark's idle handling uses it to mark an idle
// partition. It matches ControlWriter.
func (w *Writer[T]) WriteControl(ctx context.Context, to string, partition int) (int64, error) {
	for i := range w.edges {
		e := &w.edges[i]
		if e.To != to {
			continue
		}
		if partition < 0 || partition >= e.parts {
			return -1, fmt.Errorf("%w: partition %d of the edge to %q (it has %d)", ErrNoSuchEdge, partition, to, e.parts)
		}
		return w.control(ctx, e, partition, vertex.Message[T]{Tags: controlTags})
	}
	return -1, fmt.Errorf("%w: no edge to %q", ErrNoSuchEdge, to)
}

// control appends the control message m to partition of e, waiting for
// room whatever e.Discard says (a control message is never discarded), and
// returns its offset.
func (w *Writer[T]) control(ctx context.Context, e *edgeWriter[T], partition int, m vertex.Message[T]) (int64, error) {
	one := [1]vertex.Message[T]{m}
	return e.prod.ProduceTo(ctx, partition, one[:])
}

// controlTags are the tags of every control message (shared: never
// modified).
var controlTags = []string{ControlTag}

// idleLoop calls the publisher's idle hook every interval until ctx ends,
// with the replica's watermark. It returns the hook's first error (nil
// once ctx ended).
func (w *Writer[T]) idleLoop(ctx context.Context, idle IdlePublisher, every time.Duration) error {
	return runIdleLoop(ctx, idle, every, w.wm, w.WriteControl)
}

// runIdleLoop is the idle loop of a replica whose watermark is wm (nil:
// none) and whose control messages write writes.
func runIdleLoop(ctx context.Context, idle IdlePublisher, every time.Duration, wmOf func() time.Time, write ControlWriter) error {
	return onTicks(ctx, every, func() error {
		var wm time.Time
		if wmOf != nil {
			wm = wmOf()
		}
		return idle.Idle(ctx, wm, write)
	})
}

// onTicks calls f every interval until ctx ends or f fails. It returns f's
// error, or nil when ctx ended (an error then is the end's consequence).
func onTicks(ctx context.Context, every time.Duration, f func() error) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := f(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}
