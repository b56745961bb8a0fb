package forwarder

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/runnel-dev/runnel/internal/keys"
	"github.com/runnel-dev/runnel/isb/codec"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/wal"
)

// ReduceLog is the write-ahead log of one reduce replica on durable
// storage: its open windows survive a crash of the process.
//
// The contract with RunReduce:
//   - Before reading, RunReduce replays the log: every open window (session
//     merges included) is rebuilt, and the replica's watermark starts at
//     the highest watermark a GC event recorded, so that a window already
//     emitted is never opened again.
//   - Each message read is appended (its value through Codec, keys, event
//     time, partition and offset, the windows it joined) and its chunk is
//     acked to the ISB only once the append is durable. The append is
//     handed to the log without waiting (wal.AppendAsync) and is the
//     chunk's pending write: the worker goes on reading and aggregating
//     the next chunks while the fsync runs, its completer acks each chunk
//     once its append is durable (staged_worker.go, as a map worker's
//     staged writes), and wal's group commit shares one fsync among the
//     chunks appended meanwhile.
//   - A window's results are written only once every entry appended before
//     they were computed is durable, so a re-emission after a crash comes
//     from the log alone (the same messages in the same order).
//   - A redelivered message at or below Recovered().LastOffsets of its
//     partition is in the log already (in an open window, or in one
//     emitted and compacted away): it is acked without being added again.
//     This needs each partition's entries in offset order, so a replica
//     with a log runs one shard (Options.Concurrency is not used).
//   - Closing windows writes their results, then appends a GC event. A
//     crash between the two re-emits those windows after the restart, from
//     the same messages in the same order: the same result IDs and values
//     (a streaming reducer sees the replayed messages with their IDs, event
//     times, keys and values; headers and tags are not logged).
//   - A Stopped end (the pipeline was cancelled) leaves the open windows in
//     the log for the next run instead of emitting them.
//
// The caller opens the WAL (not replayed yet) and closes it after RunReduce
// returned.
type ReduceLog[In any] struct {
	WAL   *wal.WAL
	Codec codec.Codec[In]
}

// recover rebuilds the open windows from the log, before anything is read.
// The replica has one shard (see ReduceLog).
func (red *reduceReplica[In, S, Out]) recover() error {
	log := red.spec.Log
	rec := log.WAL.Recovered()
	red.logged = rec.LastOffsets
	sh := red.shards[0]
	if !rec.Watermark.IsZero() {
		sh.wm = rec.Watermark.UnixNano()
	}
	maxID := uint64(0)
	for e, err := range log.WAL.Replay() {
		if err != nil {
			return fmt.Errorf("reduce WAL replay: %w", err)
		}
		m := vertex.Message[In]{ID: e.ID, EventTime: e.EventTime, Keys: e.Keys}
		if err := log.Codec.Decode(e.Value, &m.Value); err != nil {
			return fmt.Errorf("reduce WAL replay: partition %d offset %d: value with codec %s: %w", e.Partition, e.Offset, log.Codec.Name(), err)
		}
		sh.key = keys.Append(sh.key[:0], m.Keys)
		sh.set.replay(&m, sh.key, e.Windows)
		for _, w := range e.Windows {
			maxID = max(maxID, w.Session)
		}
	}
	// New sessions take ids above every logged one.
	if maxID > red.nextID.Load() {
		red.nextID.Store(maxID)
	}
	sh.noteOldest()
	return nil
}

// alreadyLogged reports whether the message at partition and offset is in
// the log from before a restart (a redelivery).
func (red *reduceReplica[In, S, Out]) alreadyLogged(partition int, offset int64) bool {
	last, ok := red.logged[int32(partition)]
	return ok && offset <= last
}

// logEntry adds the entry of m, just added to the shard's windows, to the
// shard's pending appends. sh.mu is held.
func (sh *reduceShard[In, S, Out]) logEntry(it *inflight[In]) error {
	log := sh.red.spec.Log
	from := len(sh.vals)
	var err error
	if sh.vals, err = log.Codec.Append(sh.vals, it.msg.Value); err != nil {
		return fmt.Errorf("reduce WAL: message %q: value with codec %s: %w", it.msg.ID, log.Codec.Name(), err)
	}
	wins := len(sh.wins)
	sh.wins = sh.set.added(sh.wins)
	sh.entries = append(sh.entries, wal.Entry{Partition: int32(it.partition), Offset: it.offset,
		EventTime: it.msg.EventTime, ID: it.msg.ID, Keys: it.msg.Keys})
	sh.spans = append(sh.spans, [4]int{from, len(sh.vals), wins, len(sh.wins)})
	return nil
}

// appendLogged hands the shard's pending entries to the log and returns
// their Pending (nil when there were none), also kept as sh.pending. sh.mu
// is held.
func (sh *reduceShard[In, S, Out]) appendLogged(ctx context.Context) (*wal.Pending, error) {
	if len(sh.entries) == 0 {
		return nil, nil
	}
	// The scratch buffers may have grown while entries were added: the
	// slices are cut only now.
	for i, sp := range sh.spans {
		sh.entries[i].Value = sh.vals[sp[0]:sp[1]:sp[1]]
		sh.entries[i].Windows = sh.wins[sp[2]:sp[3]:sp[3]]
	}
	p, err := sh.red.spec.Log.WAL.AppendAsync(ctx, sh.entries...) // encodes them: the buffers are free
	clear(sh.entries)
	sh.entries, sh.spans, sh.vals = sh.entries[:0], sh.spans[:0], sh.vals[:0]
	clear(sh.wins)
	sh.wins = sh.wins[:0]
	if err != nil {
		return nil, fmt.Errorf("reduce WAL append: %w", err)
	}
	sh.pending = p
	return p, nil
}

// loggedChunk is the pending write of a chunk whose entries were handed to
// the log: it completes once they are durable.
type loggedChunk struct {
	ctx context.Context // the handler's: the replica's hard context
	p   *wal.Pending
}

func (c loggedChunk) complete() error {
	if err := c.p.Wait(c.ctx); err != nil {
		return fmt.Errorf("reduce WAL append: %w", err)
	}
	return nil
}

// logDurable waits until every entry the shard appended is durable: the
// log writes one goroutine's appends in order, so the last one suffices.
// sh.mu is held.
func (sh *reduceShard[In, S, Out]) logDurable(ctx context.Context) error {
	if sh.pending == nil {
		return nil
	}
	if err := sh.pending.Wait(ctx); err != nil {
		return fmt.Errorf("reduce WAL append: %w", err)
	}
	sh.pending = nil
	return nil
}

// logClosed appends the GC event of the windows closed at wm, whose
// results are written. The event's watermark is at most the latest end
// (plus lateness) of those windows, so that it stays in the log's time
// range at the maximum watermark of an end of stream; every window closed
// at it is emitted or, in another shard, about to be. sh.mu is held.
func (sh *reduceShard[In, S, Out]) logClosed(ctx context.Context, wm int64) error {
	if len(sh.gcs) == 0 {
		return nil
	}
	latest := int64(math.MinInt64)
	for _, w := range sh.gcs {
		latest = max(latest, w.End.UnixNano())
	}
	at := min(wm, latest+sh.red.lateness)
	err := sh.red.spec.Log.WAL.GC(ctx, time.Unix(0, at), sh.gcs...)
	clear(sh.gcs)
	sh.gcs = sh.gcs[:0]
	if err != nil {
		return fmt.Errorf("reduce WAL GC: %w", err)
	}
	return nil
}
