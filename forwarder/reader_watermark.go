package forwarder

import (
	"context"
	"time"
)

// The reader's watermark: the lowest in flight, or the newest read, raised
// on quiet partitions by the idle loop.

// watermark is the replica's watermark for the publisher: the lowest
// in-flight watermark, or the newest read when nothing is in flight.
func (r *reader[T]) watermark() time.Time {
	if wm, ok := r.tr.LowestWatermark(); ok {
		return wm
	}
	if ns := r.headWM.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// raiseHead raises the newest watermark read to wm (the reader and the idle
// loop both raise it).
func (r *reader[T]) raiseHead(wm time.Time) {
	if wm.IsZero() {
		return
	}
	ns := wm.UnixNano()
	for {
		old := r.headWM.Load()
		if ns <= old || r.headWM.CompareAndSwap(old, ns) {
			return
		}
	}
}

// idleLoop asks f every interval about each of partitions that delivered
// nothing since the previous tick (an empty read), so that a quiet
// partition, whose upstream publishes idle WMBs, advances the replica's
// watermark. It runs until ctx ends.
func (r *reader[T]) idleLoop(ctx context.Context, f IdleFetcher, every time.Duration, partitions []int) {
	t := time.NewTicker(every)
	defer t.Stop()
	last := make([]int64, len(partitions))
	for i := range last {
		last[i] = -1
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for i, p := range partitions {
			// delivered is stored after the batch's fetches and inserts,
			// so every offset below next has had its watermark fetched.
			next := r.delivered[p].Load()
			if next != last[i] {
				last[i] = next
				continue
			}
			r.raiseHead(f.FetchIdle(p, next))
		}
	}
}
