package forwarder

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/vertex"
)

// A resumable source that hands nothing over twice.
//
// A resumable source (vertex.Resumable) saves its position, what it was
// told is acknowledged, some time after the pipeline acknowledged it: a
// crash in between makes it hand over again what it had written, and the
// buffers store it again under new offsets, where no reader can tell it
// from new data (a reduce would count it twice). Saving the position in the
// same durable write as the batch is not possible (the position is one
// file, a batch goes to several partitions of several buffers, each its
// own file), so the pipeline finds what was written instead, in the
// buffers themselves, whose records carry the source's message IDs:
//
//   - With every save of the position, the pipeline records per partition
//     of each output buffer an anchor: an offset at or below every record
//     of a message the saved position does not cover. That is the lowest
//     published tail seen when a batch still in flight was registered
//     (before it was staged: its records lie above), or the tail now. The
//     buffer retains everything from the saved anchor on (isb.Topic.Retain),
//     even once read and committed downstream.
//   - On restart, before any replica reads, the pipeline reads each
//     partition from its anchor to its tail and collects the source's
//     messages (Found). A message found on every edge that carries it is
//     acknowledged to the source at once, so it is not made again (the
//     position is recovered from the buffers); one found on some of them
//     only is first written to the others, unless the source's position
//     covers it (vertex.Acknowledged): anchors are per partition, so a
//     batch acknowledged before a save may lie above the anchors of one
//     edge and below those of another; uncovered, it was cut by the crash
//     between the writes of its batch to two edges. Then the replicas read
//     on from the position.
//
// This needs stable IDs (a message handed over again has the ID it had)
// and a buffer that no other vertex writes to (another writer's IDs would
// be taken for the source's): the pipeline scans only such edges, and
// writes a found message again to the others (at least once there). It
// holds with several replicas, which share the source and interleave their
// batches in the buffers, and with several partitions and edges, since
// each message is looked up by ID on each edge: a batch written in part
// (one partition of a keyed edge flushed, another not) is found in part,
// and the rest is written when the source hands it over again.
//
// Why not the other ways: recovering only the highest position found would
// skip the batch of one replica that was read but not written while
// another replica's later batch was (a loss); dropping known IDs at every
// write would keep every ID, or need the same anchors to know which.

// SourceResume is what the replicas of a resumable source vertex share on
// durable storage (see RunResumedSource): the messages an earlier run wrote
// that the source's saved position does not cover, and the batches in
// flight, from which Anchors computes where the next restart must look.
type SourceResume[T any] struct {
	// Found is, per scanned edge (by Edge.To), the messages of the source
	// found in its buffer from the anchors of the position the source
	// resumed from to the tail, control messages excluded.
	Found map[string][]vertex.Message[T]
	// Parts is, per scanned edge (by Edge.To), its buffer's partitions.
	// Edges not in Parts are not scanned: another vertex writes to them.
	Parts map[string]int
	// Order is the scanned edges in the order of Tails and Anchors.
	Order []string
	// Tails fills dst, one element per partition of each edge of Order in
	// turn, with each partition's published tail.
	Tails func(dst []int64)
	// Start is where the scan began, in the layout of Tails: the anchors
	// stay at least this low until the found messages are acknowledged.
	Start []int64

	once     sync.Once
	startErr error

	mu       sync.Mutex
	started  bool                      // the found messages are acknowledged
	inflight map[int][]*sourceBatch[T] // per replica, registered batches in read order
}

// size is the number of anchors: every partition of every scanned edge.
func (s *SourceResume[T]) size() int {
	n := 0
	for _, e := range s.Order {
		n += s.Parts[e]
	}
	return n
}

// Anchors returns, in the layout of Tails, offsets at or below every record
// of a message that a position saved now does not cover, provided the
// position covers every acknowledgement that returned, and the one in
// progress if it is saved from vertex.Acker.Ack (see vertex.Resumable).
func (s *SourceResume[T]) Anchors() []int64 {
	a := make([]int64, s.size())
	s.Tails(a)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		lowest(a, s.Start)
	}
	for _, q := range s.inflight {
		if len(q) > 0 {
			lowest(a, q[0].snap) // the oldest: snapshots only grow
		}
	}
	return a
}

// lowest lowers a to b, element by element.
func lowest(a, b []int64) {
	for i := range a {
		a[i] = min(a[i], b[i])
	}
}

// register records that b, read by replica, will be written: its records
// lie above the tails now. Call it before b is staged.
func (s *SourceResume[T]) register(replica int, b *sourceBatch[T]) {
	if len(b.snap) != s.size() {
		b.snap = make([]int64, s.size())
	}
	s.Tails(b.snap)
	s.mu.Lock()
	if s.inflight == nil {
		s.inflight = map[int][]*sourceBatch[T]{}
	}
	s.inflight[replica] = append(s.inflight[replica], b)
	s.mu.Unlock()
}

// release forgets b once its acknowledgement returned, or it was dropped.
func (s *SourceResume[T]) release(replica int, b *sourceBatch[T]) {
	s.mu.Lock()
	q := s.inflight[replica]
	if i := slices.Index(q, b); i >= 0 {
		s.inflight[replica] = slices.Delete(q, i, i+1)
	}
	s.mu.Unlock()
}

// begin writes the found messages to the edges that miss them and
// acknowledges them to the source, once for all replicas, before any
// reads; every replica returns its error.
func (s *SourceResume[T]) begin(ctx context.Context, cfg Config, edges []Edge[T], acker vertex.Acker[T]) error {
	s.once.Do(func() {
		covers, _ := acker.(vertex.Acknowledged)
		s.startErr = s.recover(ctx, cfg, edges, acker, covers)
		s.Found = nil // done with: let the messages be collected
		if s.startErr == nil {
			s.mu.Lock()
			s.started = true
			s.mu.Unlock()
		}
	})
	return s.startErr
}

// foundMsg is a found message and the edges it was found on.
type foundMsg[T any] struct {
	m  vertex.Message[T]
	on []bool // by index in edges
}

// recover is begin's work; covers, when the source has it, says which
// found messages its position covers already.
func (s *SourceResume[T]) recover(ctx context.Context, cfg Config, edges []Edge[T], acker vertex.Acker[T], covers vertex.Acknowledged) error {
	var found []*foundMsg[T]
	byID := map[string]*foundMsg[T]{}
	for i, e := range edges {
		for _, m := range s.Found[e.To] {
			f := byID[m.ID]
			if f == nil {
				f = &foundMsg[T]{m: m, on: make([]bool, len(edges))}
				byID[m.ID] = f
				found = append(found, f)
			}
			f.on[i] = true
		}
	}
	if len(found) == 0 {
		return nil
	}
	// A message goes again to every edge that carries it and misses it,
	// unless the source's position covers it: then it was written to every
	// edge, and the anchors of some were only above its record. (Anchors
	// are per partition: a batch acknowledged before the save may have
	// written one edge before the oldest batch in flight was registered,
	// and the next after.) A message the position does not cover and that
	// is missing somewhere was cut by the crash half-way through its batch.
	missing := make([][]vertex.Message[T], len(edges))
	rewritten, covered := 0, 0
	for _, f := range found {
		if !slices.Contains(f.on, false) {
			continue
		}
		if covers != nil && covers.Acknowledged(f.m.ID) {
			covered++
			continue
		}
		again := false
		for i, e := range edges {
			if !f.on[i] && !f.m.HasTag(vertex.DropTag) && e.When.Match(f.m.Tags) {
				missing[i] = append(missing[i], f.m)
				again = true
			}
		}
		if again {
			rewritten++
		}
	}
	for i, msgs := range missing {
		if len(msgs) == 0 {
			continue
		}
		// No watermark: the reader takes the next one published.
		w := NewWriter([]Edge[T]{edges[i]}, cfg.Counters, nil, nil)
		if err := w.Write(ctx, msgs, &WriteBuffer[T]{}); err != nil {
			return fmt.Errorf("write %d messages an earlier run wrote to other edges only to %s: %w", len(msgs), edges[i].To, err)
		}
	}
	for _, f := range found {
		if err := guardedAck(ctx, acker, []vertex.Message[T]{f.m}); err != nil {
			return fmt.Errorf("acknowledge message %q, which an earlier run wrote: %w", f.m.ID, err)
		}
	}
	if cfg.Logger != nil {
		cfg.Logger.Info("source resumes after the messages an earlier run wrote past its saved position",
			zap.Int("found", len(found)), zap.Int("written again to edges that missed them", rewritten),
			zap.Int("found on some edges, covered by the position", covered))
	}
	return nil
}
