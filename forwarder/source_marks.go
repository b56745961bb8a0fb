package forwarder

import (
	"sync/atomic"
	"time"

	"github.com/runnel-dev/runnel/vertex"
)

// sourceMarks computes a source replica's watermark through its hooks.
//
// A source that reads one partition (or a hook that is no
// InputWatermarker) has one watermark per replica: each batch is observed
// under the replica index (SourceWatermarker.Observe) and a read that
// finds nothing advances it (IdleSource). A vertex.PartitionedSource whose
// hook is an InputWatermarker has one per partition it reads: each batch
// is observed under the partition it came from (ObserveInput), the other
// partitions get an idle check after it (IdleAdvanceInput), and the
// replica's watermark is what the hook returns, the lowest over the
// partitions. A read that finds nothing means none of them had data:
// IdleAdvance, as for one partition.
type sourceMarks[T any] struct {
	replica int
	hook    SourceWatermarker // nil: no watermarks, only event times
	idler   IdleSource        // nil: no idle advance
	inputs  InputWatermarker  // nil: one watermark for the replica
	parted  vertex.PartitionedSource[T]
	reads   int // partitions parted reads, with inputs

	// wm is the replica's watermark (unix ns, 0: none yet): the highest
	// the hook returned. Only the source loop writes it; the writer's idle
	// loop reads it.
	wm atomic.Int64
}

// newSourceMarks detects what src and cfg's source hook implement.
func newSourceMarks[T any](cfg Config, src vertex.Source[T]) *sourceMarks[T] {
	m := &sourceMarks[T]{replica: cfg.Replica, hook: cfg.Hooks.Source}
	m.idler, _ = m.hook.(IdleSource)
	iw, ok := m.hook.(InputWatermarker)
	ps, parted := src.(vertex.PartitionedSource[T])
	if ok && parted && ps.ReadPartitions() > 1 {
		m.inputs, m.parted, m.reads = iw, ps, ps.ReadPartitions()
	}
	return m
}

// stamp gives messages without an event time the current time and, with a
// source watermark hook, sets each message's watermark and lateness from
// the replica's watermark after the batch.
func (m *sourceMarks[T]) stamp(msgs []vertex.Message[T]) {
	var now, minET time.Time
	for i := range msgs {
		msg := &msgs[i]
		if msg.EventTime.IsZero() {
			if now.IsZero() {
				now = time.Now()
			}
			msg.EventTime = now
		}
		if minET.IsZero() || msg.EventTime.Before(minET) {
			minET = msg.EventTime
		}
	}
	if m.hook == nil {
		return
	}
	var w time.Time
	if m.inputs != nil {
		w = m.inputs.ObserveInput(m.replica, m.parted.PartitionOf(msgs), minET)
	} else {
		w = m.hook.Observe(m.replica, minET)
	}
	for i := range msgs {
		msgs[i].Watermark = w
		msgs[i].Late = msgs[i].EventTime.Before(w)
	}
	raise(&m.wm, w)
}

// idle runs the idle hooks after a read that returned msgs: a read that
// found nothing advances every partition the replica reads; a batch, with
// a watermark per partition, the partitions it did not come from.
func (m *sourceMarks[T]) idle(msgs []vertex.Message[T]) {
	switch {
	case len(msgs) == 0 && m.idler != nil:
		if w, ok := m.idler.IdleAdvance(m.replica); ok {
			raise(&m.wm, w)
		}
	case len(msgs) > 0 && m.inputs != nil:
		from := m.parted.PartitionOf(msgs)
		for in := range m.reads {
			if in == from {
				continue
			}
			if w, ok := m.inputs.IdleAdvanceInput(m.replica, in); ok {
				raise(&m.wm, w)
			}
		}
	}
}

// raise raises the source watermark wm (unix ns) to w; the idle loop reads
// it concurrently.
func raise(wm *atomic.Int64, w time.Time) {
	if w.IsZero() {
		return
	}
	ns := w.UnixNano()
	if ns > wm.Load() {
		wm.Store(ns) // only the source loop writes wm
	}
}

// watermark is the replica's source watermark (zero before the first).
func (m *sourceMarks[T]) watermark() time.Time {
	if ns := m.wm.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}
