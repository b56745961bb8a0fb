package forwarder

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// Edge is one outgoing edge of a vertex: the input buffer of the vertex To.
type Edge[T any] struct {
	To    string                        // destination vertex
	Topic *isb.Topic[vertex.Message[T]] // its input buffer
	// When selects the messages the edge carries by their tags; nil
	// carries every message.
	When *vertex.Condition
	// Discard drops (and counts) what does not fit when Topic is full;
	// otherwise the writer waits for room.
	Discard bool
	// ByKey routes by a stable hash of the message keys; otherwise each
	// write goes to the next partition in turn.
	ByKey bool
	// Counters, when not nil, count what the edge wrote and discarded.
	Counters *EdgeCounters
}

// Writer writes a replica's outputs to its outgoing edges. It is safe for
// concurrent use; each goroutine passes its own *WriteBuffer.
type Writer[T any] struct {
	edges    []edgeWriter[T]
	counters *Counters
	pub      WatermarkPublisher
	wm       func() time.Time
	anyCond  bool    // some edge has a condition
	cfg      *Config // where drops are reported (nil: not reported)
}

type edgeWriter[T any] struct {
	Edge[T]
	prod  *isb.Producer[vertex.Message[T]] // appends a batch to the partition the writer picks
	parts int
	// byKey routes each message by its keys (ByKey edges): the isb routes,
	// and reports the last offset it wrote to each partition.
	byKey *isb.Producer[vertex.Message[T]]
	next  atomic.Uint64 // the partition of the next unkeyed batch
}

// WriteBuffer is one goroutine's scratch space for Writer.Write, reused
// across calls so that writing allocates nothing.
type WriteBuffer[T any] struct {
	sel  []vertex.Message[T] // messages the edge carries
	last []int64             // per partition, the last offset of a keyed write
	one  []int64             // the same, for one message of a discarding retry

	// staged are the writes of the last Stage that Complete waits for,
	// and wm the replica's watermark when they were staged.
	staged []stagedWrite[T]
	wm     time.Time

	// skip, when set for a write, leaves out of the edge of index edge
	// the messages it reports: outputs a restarted map found it wrote
	// before (map_resume.go).
	skip func(edge int, m *vertex.Message[T]) bool
}

// stagedWrite is one write of a Stage: n messages to partition part of e,
// the last at offset last once pending is published.
type stagedWrite[T any] struct {
	e       *edgeWriter[T]
	part    int
	n       int
	pending isb.Pending[vertex.Message[T]]
}

// NewWriter returns a writer to edges. wm gives the replica's watermark for
// the publisher; both may be nil.
func NewWriter[T any](edges []Edge[T], counters *Counters, pub WatermarkPublisher, wm func() time.Time) *Writer[T] {
	w := &Writer[T]{edges: make([]edgeWriter[T], len(edges)), counters: counters, pub: pub, wm: wm}
	for i, e := range edges {
		ew := &w.edges[i]
		ew.Edge = e
		w.anyCond = w.anyCond || e.When != nil
		// An unkeyed batch goes to one partition, the next in turn, with
		// ProduceTo; a keyed one is routed per message by the isb, whose
		// ProduceBatchLast says where each partition's last message went.
		// Either way the writer knows which partitions it wrote and the
		// offset of each write (the watermark publisher needs both).
		ew.prod = e.Topic.Producer(nil)
		ew.parts = e.Topic.Partitions()
		if e.ByKey && ew.parts > 1 {
			ew.byKey = e.Topic.Producer(isb.ByKeys(keysOf[T]))
		}
	}
	return w
}

// reportingTo makes w report the messages it drops as cfg says
// (Config.reportDrop), and returns w.
func (w *Writer[T]) reportingTo(cfg Config) *Writer[T] {
	w.cfg = &cfg
	return w
}

// reportDrop reports n messages dropped for reason, when w reports.
func (w *Writer[T]) reportDrop(reason string, n int, fields ...zap.Field) {
	if w.cfg != nil && n > 0 {
		w.cfg.reportDrop(reason, n, fields...)
	}
}

// keysOf is the routing key of a message: its key list, which isb.ByKeys
// hashes in the unambiguous encoding of internal/keys (the one the reduce
// groups windows by), with no seed.
func keysOf[T any](m vertex.Message[T]) []string { return m.Keys }

// Write writes msgs to every edge whose condition their tags satisfy and
// returns when all are written (or discarded by a discarding edge). A
// message tagged vertex.DropTag, or matching no edge, is dropped.
func (w *Writer[T]) Write(ctx context.Context, msgs []vertex.Message[T], buf *WriteBuffer[T]) error {
	return w.write(ctx, msgs, buf, false)
}

// Stage is Write that does not wait for durable storage to flush: it
// returns once msgs are stored, in order after everything written before,
// but not yet visible downstream (see isb.Caps.Deferred), and Complete(buf)
// waits for them. Edges that cannot stage (keyed, discarding, storage
// without staging) are written as Write writes them. The watermarks of the
// staged writes are published by Complete, with the replica's watermark as
// it is now: what a reader downstream may learn only once it can read the
// messages. buf belongs to this write until Complete returns.
func (w *Writer[T]) Stage(ctx context.Context, msgs []vertex.Message[T], buf *WriteBuffer[T]) error {
	buf.staged = buf.staged[:0]
	buf.wm = w.watermark()
	return w.write(ctx, msgs, buf, true)
}

// Stages reports whether Stage can leave writes in flight: some edge
// writes to storage that stages writes. Otherwise Stage is Write.
func (w *Writer[T]) Stages() bool {
	for i := range w.edges {
		if w.edges[i].stages() {
			return true
		}
	}
	return false
}

// stages reports whether writes to e can be staged: an edge that routes
// by key (over several partitions) or discards what does not fit is
// written at once, and memory storage has nothing to stage.
func (e *Edge[T]) stages() bool {
	return !(e.ByKey && e.Topic.Partitions() > 1) && !e.Discard && e.Topic.Stages()
}

// Complete waits until the writes of the last Stage with buf are durable
// and visible, counts them and publishes their watermarks, in the order
// they were staged. It returns the first error; the writes after it are
// not published.
func (w *Writer[T]) Complete(buf *WriteBuffer[T]) error {
	defer clear(buf.staged) // let the topics be collected
	for i := range buf.staged {
		s := &buf.staged[i]
		if err := s.pending.Wait(); err != nil {
			return err
		}
		w.wrote(s.e, s.n, s.n)
		w.publish(s.e, s.part, s.pending.Last(), buf.wm)
	}
	buf.staged = buf.staged[:0]
	return nil
}

// write is Write, or with stage Stage.
func (w *Writer[T]) write(ctx context.Context, msgs []vertex.Message[T], buf *WriteBuffer[T], stage bool) error {
	if len(msgs) == 0 {
		return nil
	}
	drops, err := scanTags(msgs)
	if err != nil {
		return err
	}
	for i := range w.edges {
		e := &w.edges[i]
		if e.When == nil && !drops && buf.skip == nil {
			// The edge takes every message: no copy.
			if err := w.writeEdge(ctx, e, msgs, buf, stage); err != nil {
				return err
			}
			continue
		}
		sel := buf.sel[:0]
		for k := range msgs {
			m := &msgs[k]
			if (len(m.Tags) > 0 && m.HasTag(vertex.DropTag)) || !e.When.Match(m.Tags) {
				continue
			}
			if buf.skip != nil && buf.skip(i, m) {
				continue // written before a restart
			}
			sel = append(sel, *m)
		}
		buf.sel = sel
		if len(sel) == 0 {
			continue
		}
		if err := w.writeEdge(ctx, e, sel, buf, stage); err != nil {
			return err
		}
	}
	// A message counts as dropped when it went to no edge at all.
	if !w.anyCond && !drops {
		return nil
	}
	if tagged, unrouted := w.countUnrouted(msgs); tagged+unrouted > 0 {
		w.counters.drop(reasonTagged, tagged)
		w.counters.drop(reasonNoEdge, unrouted)
		w.reportDrop(DropTagged, tagged)
		w.reportDrop(DropUnrouted, unrouted)
	}
	clear(buf.sel) // let the values be collected
	return nil
}

// scanTags reports whether a message of msgs carries vertex.DropTag, and
// refuses (ErrReservedTag) a message carrying ControlTag, which a reader
// would skip unprocessed. Messages without tags cost one length check.
func scanTags[T any](msgs []vertex.Message[T]) (drops bool, err error) {
	for k := range msgs {
		for _, t := range msgs[k].Tags {
			switch t {
			case vertex.DropTag:
				drops = true
			case ControlTag:
				return false, fmt.Errorf("%w: message %q is tagged %q", ErrReservedTag, msgs[k].ID, t)
			}
		}
	}
	return drops, nil
}

// countUnrouted counts the messages of msgs that no edge carries: those
// tagged vertex.DropTag, and the others no edge's condition matched.
func (w *Writer[T]) countUnrouted(msgs []vertex.Message[T]) (tagged, unrouted int) {
	for k := range msgs {
		m := &msgs[k]
		if m.HasTag(vertex.DropTag) {
			tagged++
			continue
		}
		carried := false
		for i := range w.edges {
			if w.edges[i].When.Match(m.Tags) {
				carried = true
				break
			}
		}
		if !carried {
			unrouted++
		}
	}
	return tagged, unrouted
}

// watermark is the replica's watermark now (zero without one).
func (w *Writer[T]) watermark() time.Time {
	if w.pub == nil || w.wm == nil {
		return time.Time{}
	}
	return w.wm()
}
