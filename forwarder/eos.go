package forwarder

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/watermark"
)

// End of stream.
//
// A processor (a vertex replica; for a source, a source partition, which is
// its replica) that will write nothing more ends its output with one
// end-of-stream message on every partition of every outgoing edge
// (Writer.WriteEnd): a control message (ControlTag) carrying EndTag or
// StopTag, whose ID names the processor. It travels through the buffers like
// data, so it is stored by any storage that stores tags, and a reader in
// another process sees it as this one does.
//
// A reader knows from the graph how many processors write to each of its
// input partitions (Input.Writers). It ends a partition once it has read an
// end-of-stream message from that many distinct processors there, and ends
// itself once every partition it reads has ended and everything it read is
// acked; then it ends its own output the same way. InputEnds is that
// bookkeeping, for every kind of reader (map, sink, reduce).
//
// Two kinds of end:
//   - Final (EndTag): the processor's stream is over for good (a bounded
//     source was exhausted, or every input of the processor ended Final).
//     Its last WMB on each partition is watermark.Max, and a reader whose
//     partitions all ended Final has the watermark watermark.Max: windows
//     close and flush.
//   - Stopped (StopTag): the processor stopped before its stream was over
//     (the pipeline was cancelled). Readers drain and end as for Final, but
//     the watermark stays where it was: a pipeline stopped to be resumed
//     later must not close windows that more data will reach.
//
// A partition fed by several processors ends Final only when every one of
// them ended Final; a reader ends Final only when every partition did.
//
// A reduce forwarder reuses the same pieces: it gives every end-of-stream
// message it reads (EndOf) to its InputEnds; when Done it closes its windows
// (after a Final end its watermark is watermark.Max, so every window closes
// by watermark; after a Stopped one they stay open in the reduce WAL when
// it has one, and are emitted as they are when it has none, since memory
// is then their only copy) and ends its output with
// Writer.WriteEnd(ctx, cfg.Processor(), ends.Kind()).
//
// Restarts: readers count each processor once per partition (by the end
// message's ID), so an end redelivered, or written again by a processor that
// restarted and ended again, is harmless. A reader that committed past an
// end before a restart does not read it again. In one process it relies on
// that processor ending again when it restarts, which a resumed source that
// is exhausted does at once, and so every processor below it. On storage
// shared by processes the processor may never run again: the reader learns
// of its end from the final WMB it published (Input.Ended, reader_ends.go),
// which can reach the store after the reader restarted, so it keeps asking.
const (
	// EndTag marks, with ControlTag, the end-of-stream message of a
	// processor whose stream is over (EndKind Final).
	EndTag = "runnel/end"
	// StopTag marks, with ControlTag, the end-of-stream message of a
	// processor that stopped before its stream was over (EndKind Stopped).
	StopTag = "runnel/stop"
)

// EndKind says how a stream ended. Its zero value means "not ended".
type EndKind uint8

const (
	// Final: the stream is over; its final watermark is watermark.Max.
	Final EndKind = iota + 1
	// Stopped: the stream stopped (the pipeline was cancelled) and may go
	// on in a later run; the watermark claims nothing.
	Stopped
)

// String returns "final", "stopped" or "not ended".
func (k EndKind) String() string {
	switch k {
	case Final:
		return "final"
	case Stopped:
		return "stopped"
	}
	return "not ended"
}

// weaker returns the weaker of two ends: Stopped beats Final, and anything
// beats "not ended" (the kind of a partition or reader is the weakest end of
// what feeds it).
func (k EndKind) weaker(o EndKind) EndKind { return max(k, o) }

// endTags are the tags of the end-of-stream messages, by kind (shared:
// never modified).
var endTags = [...][]string{
	Final:   {ControlTag, EndTag},
	Stopped: {ControlTag, StopTag},
}

// Processor names the processor of cfg (vertex and replica, and the run
// when Config.Run is set) in the end-of-stream messages it writes: unique
// among the writers of an edge.
func (c Config) Processor() string {
	p := c.Vertex + "/" + strconv.Itoa(c.Replica)
	if c.Run != "" {
		p += "@" + c.Run
	}
	return p
}

// ofRun reports whether the end-of-stream message of processor was written
// in run (any run when run is ""). An end of another run is stale: a run
// that was killed after a processor wrote its end to a durable buffer and
// before the reader committed past it leaves it there, and the processor
// of the next run has not ended; counting it would end the reader before
// the new run's data (and, for a reduce, close its windows early).
func ofRun(processor, run string) bool {
	return run == "" || strings.HasSuffix(processor, "@"+run)
}

// EndOf reports whether m is an end-of-stream message and, when it is, the
// processor that wrote it and how its stream ended.
func EndOf[T any](m *vertex.Message[T]) (processor string, kind EndKind, ok bool) {
	if len(m.Tags) < 2 || !m.HasTag(ControlTag) {
		return "", 0, false
	}
	for _, t := range m.Tags {
		switch t {
		case EndTag:
			return m.ID, Final, true
		case StopTag:
			return m.ID, Stopped, true
		}
	}
	return "", 0, false
}

// InputEnds is the end-of-stream bookkeeping of one reader: which of the
// partitions it reads have ended, and how. Pass it every end-of-stream
// message read (Observe); the reader's input has ended when Done. It is
// owned by the reader's goroutine (not safe for concurrent use).
type InputEnds struct {
	writers int
	parts   map[int]*partitionEnds // the partitions read
	left    int                    // partitions not yet ended
	kind    EndKind                // the weakest end of the ended partitions
}

// partitionEnds is what one partition has seen.
type partitionEnds struct {
	seen map[string]struct{} // processors whose end was read
	kind EndKind             // the weakest of their ends
}

// NewInputEnds returns the bookkeeping of a reader of partitions, each
// written by writers processors (the replicas of every vertex feeding the
// buffer). With writers 0 the input never ends by itself.
func NewInputEnds(partitions []int, writers int) *InputEnds {
	e := &InputEnds{writers: writers, parts: make(map[int]*partitionEnds, len(partitions))}
	for _, p := range partitions {
		if e.parts[p] == nil {
			e.parts[p] = &partitionEnds{seen: map[string]struct{}{}}
			e.left++
		}
	}
	return e
}

// Observe records the end-of-stream message of processor, of kind, read
// from partition. It returns true, with the partition's kind, exactly once
// per partition: when the last of its writers' ends is read. A processor's
// end read again (redelivered, or written again by a restarted processor)
// counts once; a partition the reader does not read changes nothing.
func (e *InputEnds) Observe(partition int, processor string, kind EndKind) (ended bool, partitionKind EndKind) {
	pe := e.parts[partition]
	if pe == nil || e.writers <= 0 || len(pe.seen) >= e.writers {
		return false, 0
	}
	if _, dup := pe.seen[processor]; dup {
		return false, 0
	}
	pe.seen[processor] = struct{}{}
	pe.kind = pe.kind.weaker(kind)
	if len(pe.seen) < e.writers {
		return false, 0
	}
	e.left--
	e.kind = e.kind.weaker(pe.kind)
	return true, pe.kind
}

// Done reports whether every partition read has ended.
func (e *InputEnds) Done() bool { return e.writers > 0 && e.left == 0 }

// Kind is how the input ended once Done: Final when every partition ended
// Final, Stopped when one did not; zero before Done.
func (e *InputEnds) Kind() EndKind {
	if !e.Done() {
		return 0
	}
	return e.kind
}

// WriteEnd ends the writer's output: it appends the end-of-stream message of
// processor, of kind, to every partition of every edge (whatever the edge's
// condition, waiting for room whatever its Full mode: an end is never
// dropped) and, for a Final end, has the publisher publish its final WMB
// (watermark.Max) there when it is an EndPublisher. Call it once, when every
// write of the processor is done; write nothing after it.
func (w *Writer[T]) WriteEnd(ctx context.Context, processor string, kind EndKind) error {
	if kind != Final && kind != Stopped {
		return fmt.Errorf("forwarder: WriteEnd of %q: kind %d is not an end", processor, kind)
	}
	end := vertex.Message[T]{ID: processor, Tags: endTags[kind]}
	if kind == Final {
		end.EventTime = watermark.Max // the final watermark, for whoever reads the message
	}
	endPub, _ := w.pub.(EndPublisher)
	for i := range w.edges {
		e := &w.edges[i]
		for p := range e.parts {
			off, err := w.control(ctx, e, p, end)
			if err != nil {
				return fmt.Errorf("forwarder: end of stream of %q to %q partition %d: %w", processor, e.To, p, err)
			}
			if kind == Final && endPub != nil {
				endPub.PublishEnd(e.To, p, off)
			}
		}
	}
	return nil
}
