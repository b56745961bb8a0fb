package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/forwarder"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// Resuming a source on durable storage.
//
// A resumable source (vertex.Resumable) gets its state file before any
// replica reads. When it is also a vertex.Acker (the generator is), the
// pipeline makes its position durable together with what it wrote, so
// that it hands nothing over twice after a crash (forwarder.SourceResume
// says how, and why this way): with each save of the state, the state file
// records anchors for every output buffer no other vertex writes to, and
// the buffer retains its records from the anchors on (isb.Topic.Retain);
// on the next open the pipeline reads each of those buffers from its
// anchors to its tail, and the source's replicas acknowledge what they
// find before reading on.
//
// With no state file at all (a first run, or a file deleted to start the
// source again) every retained record may be the source's, so the scan
// starts at each partition's head. A state file without anchors (written
// by an earlier version, or an edge added since) cannot say where the
// source's unsaved writes are: the scan finds nothing there, as before
// anchors existed (at least once), and says so in the log.

// prepareSource gives a resumable source its state store, and returns
// what its replicas need to resume (nil: nothing to do). Run calls it once,
// after every buffer is open and before any replica starts.
func prepareSource[T any](c *config, p *Pipeline, n *node, src vertex.Source[T]) (*forwarder.SourceResume[T], error) {
	r, ok := src.(vertex.Resumable)
	if !ok || !c.storage.Durable() {
		return nil, nil
	}
	store, err := c.storage.SourceState(p.name, n.name)
	if err != nil {
		return nil, err
	}
	if store == nil {
		return nil, fmt.Errorf("%w: %s keeps no source state for a resumable source", ErrStorage, c.storage)
	}
	began := time.Now()
	file := sourceState{store: store}
	log := c.logger.With(zap.String("pipeline", p.name), zap.String("vertex", n.name))
	var res *forwarder.SourceResume[T]
	if _, acks := src.(vertex.Acker[T]); acks {
		saved, exists, err := readState(store)
		if err != nil {
			return nil, err
		}
		if res, file.anchors, err = scanOutputs[T](log, n, saved, exists); err != nil {
			return nil, err
		}
	}
	probe := &stateProbe{sourceState: file}
	if err := r.Resume(probe); err != nil {
		return nil, err
	}
	log.Info("source resumes", zap.Stringer("state", store), zap.Bool("saved position found", probe.found),
		zap.Int("state bytes", probe.size), zap.Duration("took", time.Since(began)))
	return res, nil
}

// stateProbe is a source's state store that notes what Load found, for
// the line saying how the source resumed.
type stateProbe struct {
	sourceState
	found bool
	size  int
}

func (s *stateProbe) Load() ([]byte, bool, error) {
	b, ok, err := s.sourceState.Load()
	s.found, s.size = ok, len(b)
	return b, ok, err
}

// sourceAnchors ties a source's state file to its replicas' batches in
// flight and its output buffers: now gives the anchors to save with the
// state, hold makes the buffers retain what they lie below.
type sourceAnchors struct {
	order   []string                          // the scanned edges, as in res.Tails
	parts   []int                             // their partitions
	anchors func() []int64                    // SourceResume.Anchors
	retain  []func(p int, offset int64) error // per edge, its topic's Retain
}

// now returns the anchors for a save that starts now, by edge.
func (a *sourceAnchors) now() map[string][]int64 {
	flat := a.anchors()
	m := make(map[string][]int64, len(a.order))
	for i, e := range a.order {
		m[e], flat = flat[:a.parts[i]:a.parts[i]], flat[a.parts[i]:]
	}
	return m
}

// hold makes every scanned buffer retain its records from m on: m is
// saved, so what lies below it is never needed again.
func (a *sourceAnchors) hold(m map[string][]int64) error {
	var errs []error
	for i, e := range a.order {
		for p, off := range m[e] {
			if err := a.retain[i](p, off); err != nil {
				errs = append(errs, fmt.Errorf("pipeline: retain buffer %s partition %d from offset %d: %w", e, p, off, err))
			}
		}
	}
	return errors.Join(errs...)
}

// sourceHolder is the holder of a source vertex's holds on its output
// buffers (isb.Topic.Retain): one per vertex, as its replicas share one
// position.
func sourceHolder(vertex string) string { return "source/" + vertex }

// scanOutputs reads what the source wrote after its saved state in each
// output buffer only it writes to, holds those records, and returns them
// for the replicas with the anchors the state file saves from now on.
func scanOutputs[T any](log *zap.Logger, n *node, saved savedState, exists bool) (*forwarder.SourceResume[T], *sourceAnchors, error) {
	res := &forwarder.SourceResume[T]{Found: map[string][]vertex.Message[T]{}, Parts: map[string]int{}}
	a := &sourceAnchors{anchors: res.Anchors}
	var bufs []*inputBuffer[T]
	for _, e := range n.outs {
		if e.late || len(e.to.ins) != 1 {
			continue // another vertex writes there too: its IDs are not the source's
		}
		b := e.to.in.(*inputBuffer[T])
		parts := b.topic.Partitions()
		start := make([]int64, parts)
		stored, has := saved.anchors[e.to.name]
		for p, l := range b.logs {
			switch {
			case has && len(stored) == parts:
				start[p] = stored[p]
			case !exists:
				start[p] = l.Head() // no state: whatever is retained may be the source's
			default:
				start[p] = l.Tail()
			}
		}
		if exists && !(has && len(stored) == parts) {
			log.Warn("the source state has no anchors for this buffer: what the source wrote after its last save, it writes again",
				zap.String("buffer", e.to.name))
		}
		found, err := b.scan(log, start)
		if err != nil {
			return nil, nil, fmt.Errorf("read back buffer %s: %w", e.to.name, err)
		}
		for p, off := range start {
			if err := b.topic.Retain(sourceHolder(n.name), p, off); err != nil {
				return nil, nil, fmt.Errorf("retain buffer %s partition %d from offset %d: %w", e.to.name, p, off, err)
			}
		}
		res.Found[e.to.name], res.Parts[e.to.name] = found, parts
		res.Order = append(res.Order, e.to.name)
		res.Start = append(res.Start, start...)
		a.order, a.parts = append(a.order, e.to.name), append(a.parts, parts)
		topic, holder := b.topic, sourceHolder(n.name)
		a.retain = append(a.retain, func(p int, off int64) error { return topic.Retain(holder, p, off) })
		bufs = append(bufs, b)
	}
	res.Tails = func(dst []int64) {
		k := 0
		for _, b := range bufs {
			for _, l := range b.logs {
				dst[k] = l.Tail()
				k++
			}
		}
	}
	return res, a, nil
}

// scan returns the data messages of every partition p from start[p] to
// its tail. A damaged record is stepped over: its message, if it was the
// source's, is written again.
func (b *inputBuffer[T]) scan(log *zap.Logger, start []int64) ([]vertex.Message[T], error) {
	var out []vertex.Message[T]
	err := b.readBack(log, start, nil, func(_ int, _ int64, m *vertex.Message[T]) error {
		out = append(out, *m)
		return nil
	})
	return out, err
}

// scanBatch is how many records readBack reads at a time.
const scanBatch = 512

// readBack calls visit with every data message of every partition p from
// start[p] to its tail, and where it lies; the message is valid during the
// call only. prepare, when not nil, is called once with the read buffer
// (scanBatch messages) before the first read: the map sets the origin
// slots there that the envelope decodes into. A damaged record is stepped
// over: what it held, the writer writes again. Records below a partition's
// head, released before they could be read, are logged.
func (b *inputBuffer[T]) readBack(log *zap.Logger, start []int64, prepare func([]vertex.Message[T]), visit func(p int, at int64, m *vertex.Message[T]) error) error {
	buf := make([]vertex.Message[T], scanBatch)
	if prepare != nil {
		prepare(buf)
	}
	for p, l := range b.logs {
		from, head, tail := start[p], l.Head(), l.Tail()
		if head > from {
			// Retain kept them, unless the anchors were saved by a run
			// that could not hold them: what the writer wrote there it
			// writes again.
			log.Warn("records past the writer's saved anchor were removed before they could be read back",
				zap.String("buffer", b.group), zap.Int("partition", p), zap.Int64("removed", l.Count(from, head)))
			from = head
		}
		for off := from; off < tail; {
			first, got, err := l.Read(context.Background(), off, len(buf), buf)
			if errors.Is(err, isb.ErrCorrupt) {
				if at, ok := isb.CorruptOffset(err); ok && at > off {
					off = at // damage past off: the offsets between hold nothing
				}
				off++
				continue
			}
			if h := l.Head(); errors.Is(err, isb.ErrOutOfRange) && h > off {
				// On shared storage another process's reader may release
				// what this scan had not reached yet: what is gone is
				// committed by every group, and held by no writer (stored
				// holds, isb.Topic.Retain), so no writer needs it back.
				log.Debug("records released while being read back", zap.String("buffer", b.group),
					zap.Int("partition", p), zap.Int64("from", off), zap.Int64("head", h))
				off = h
				continue
			}
			if err != nil {
				return fmt.Errorf("partition %d offset %d: %w", p, off, err)
			}
			// The batch starts at first, past off where the storage left
			// offsets unused (a packed JetStream frame's end).
			for k := range got {
				if !got[k].HasTag(forwarder.ControlTag) {
					if err := visit(p, first+int64(k), &got[k]); err != nil {
						return err
					}
				}
			}
			off = first + int64(len(got))
		}
	}
	return nil
}
