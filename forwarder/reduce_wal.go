package forwarder

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/internal/keys"
	"github.com/runnel-dev/runnel/isb/codec"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/wal"
)

// ReduceLog is the write-ahead log of one reduce replica on durable
// storage: its open windows survive a crash of the process.
//
// # One log per input partition
//
// The replica keeps one wal.WAL per partition it reads, and an entry goes
// to the log of its message's partition. A partition is what outlives a
// change of Replicas: the partition count is fixed by the buffer (which
// refuses another count), routing by keys sends a key to the same
// partition in every run, and the replicas only split the partitions
// among them. So a restart with 3 replicas instead of 2 opens the same
// logs, each in the replica that now reads its partition, and every open
// window reaches the replica that owns its keys; nothing is filtered or
// copied. The alternative, one log per replica replayed by every new
// replica with a filter on the partitions it owns, must read every old log
// in every new replica, and cannot compact or delete an old log until all
// of them have taken their part, which needs a migration step anyway.
//
// What it costs: one fsync per log written in a group commit instead of
// one per replica. Chunks come from one read batch, so from one
// partition, and each is appended to one log; a replica reading k
// partitions runs k group commits, whose fsyncs go to k files in
// parallel. With as many partitions as replicas (the default) it is one
// log per replica, as before. Closing windows appends the GC event to
// every log of the replica (GCAsync, waited together): an aligned window
// spans every partition's keys, and the logs all keep the replica's GC
// watermark. Session ids are unique in the vertex (SessionIDs), so a GC
// never names another log's open session.
//
// # The contract with RunReduce
//
//   - Before reading, RunReduce replays every log: every open window
//     (session merges included) is rebuilt. A message of partition p is
//     judged late at least at the highest watermark a GC event of p's log
//     recorded, so that a window already emitted for p's keys is never
//     opened again; the replica's own watermark starts at the lowest of
//     them, so no partition's data is judged on another's progress (after a
//     rescale a replica may take over partitions that lagged).
//   - Each message read is appended (its value through Codec, keys, event
//     time, partition and offset, the windows it joined) and its chunk is
//     acked to the ISB only once the append is durable. The append is
//     handed to the log without waiting (wal.AppendAsync) and is the
//     chunk's pending write: the worker goes on reading and aggregating
//     the next chunks while the fsync runs, its completer acks each chunk
//     once its append is durable (completer.go, as a map worker's
//     staged writes), and wal's group commit shares one fsync among the
//     chunks appended meanwhile.
//   - A window's results are written only once every entry appended before
//     they were computed is durable, so a re-emission after a crash comes
//     from the log alone (the same messages in the same order).
//   - A redelivered message at or below Recovered().LastOffsets of its
//     partition is in the log already (in an open window, or in one
//     emitted and compacted away): it is acked without being added again.
//     This needs each partition's entries in offset order, so a replica
//     with a log runs one shard: RunReduce does not use
//     Options.Concurrency, and package pipeline refuses a Concurrency above
//     1 for a reduce on durable storage. Shards appending concurrently
//     would interleave a partition's offsets in its log, and a crash that
//     left a later entry durable and an earlier one not would make the
//     restart skip the earlier message (a loss). Running several shards
//     would need a partition's entries merged in offset order across them
//     before each append, a barrier per read batch that would take back
//     most of what the shards gain: adding a message to a window costs
//     little beside encoding, logging and syncing it.
//   - Closing windows writes their results, then appends a GC event. A
//     crash between the two re-emits those windows after the restart, from
//     the same messages in the same order: the same result IDs and values
//     (a streaming reducer sees the replayed messages with their IDs, event
//     times, keys and values; headers and tags are not logged).
//   - A Stopped end (the pipeline was cancelled) leaves the open windows in
//     the log for the next run instead of emitting them, unless EmitOnStop.
//
// The caller opens the WALs (not replayed yet), checks that they are the
// logs of this vertex's windowing and partitions (package pipeline records
// both in each log's wal.Metadata), and closes them after RunReduce
// returned.
type ReduceLog[In any] struct {
	// WALs holds the log of each partition the replica reads, by
	// partition: exactly the consumer's assigned partitions.
	WALs  map[int]*wal.WAL
	Codec codec.Codec[In]
	// SessionIDs, when not nil, numbers the sessions of every replica of
	// the vertex (the replicas of a vertex on storage one process owns run
	// in one process), so that ids are unique among all its logs, which a
	// later run may hand to one replica. Set it to the current time in
	// nanoseconds before the replicas start; a replica raises it above
	// every id it replays. Nil: the replica numbers its own.
	SessionIDs *atomic.Uint64
	// EmitOnStop makes a Stopped end emit every open window, as on memory
	// storage, instead of leaving them in the log: the way to close out
	// windows of a windowing about to change.
	EmitOnStop bool
}

// replicaLogs is the run-time state of a replica's logs: the shard's (one
// shard with a log), used under its mutex.
type replicaLogs struct {
	parts  []*partLog // ascending partition
	byPart []*partLog // indexed by partition, nil where the replica reads none
	// floors holds, by partition, the watermark below which its log's
	// windows were closed (MinInt64: none).
	floors []int64
	pends  []*wal.Pending // logClosed's scratch
	// closingOut is set while a Stopped end emits the open windows
	// (EmitOnStop): their GC events then carry the shard's watermark
	// (closeOutAt), not the maximum one the closing uses.
	closingOut bool
	closeOutAt int64
}

// partLog is the log of one partition.
type partLog struct {
	partition int
	w         *wal.WAL
	// pending is the last append handed to the log, maybe not yet durable:
	// results are written only once it is (see closeUpTo).
	pending *wal.Pending
}

// newReplicaLogs checks that log has one WAL for each assigned partition
// and none other.
func newReplicaLogs[In any](log *ReduceLog[In], assigned []int) (*replicaLogs, error) {
	if len(log.WALs) != len(assigned) {
		return nil, fmt.Errorf("reduce WAL: %d logs for the %d partitions %v the replica reads", len(log.WALs), len(assigned), assigned)
	}
	ls := &replicaLogs{}
	for _, p := range assigned {
		w := log.WALs[p]
		if w == nil {
			return nil, fmt.Errorf("reduce WAL: no log for partition %d, which the replica reads", p)
		}
		for len(ls.byPart) <= p {
			ls.byPart, ls.floors = append(ls.byPart, nil), append(ls.floors, math.MinInt64)
		}
		pl := &partLog{partition: p, w: w}
		ls.byPart[p] = pl
		ls.parts = append(ls.parts, pl)
	}
	return ls, nil
}

// of returns the log of partition p.
func (ls *replicaLogs) of(p int) (*partLog, error) {
	if p < 0 || p >= len(ls.byPart) || ls.byPart[p] == nil {
		return nil, fmt.Errorf("reduce WAL: a message of partition %d, which has no log in this replica", p)
	}
	return ls.byPart[p], nil
}

// lateAt is the watermark a message of partition p is judged late at: the
// shard's, or the one below which p's log closed windows, if higher.
func (red *reduceReplica[In, S, Out]) lateAt(p int, wm int64) int64 {
	if ls := red.logs; ls != nil && p < len(ls.floors) {
		return max(wm, ls.floors[p])
	}
	return wm
}

// recover rebuilds the open windows from the logs, before anything is
// read. The replica has one shard (see ReduceLog).
func (red *reduceReplica[In, S, Out]) recover(assigned []int) error {
	log := red.spec.Log
	ls, err := newReplicaLogs(log, assigned)
	if err != nil {
		return err
	}
	red.logs = ls
	red.logged = map[int32]int64{}
	sh := red.shards[0]
	low := int64(math.MaxInt64)
	maxID := uint64(0)
	for _, pl := range ls.parts {
		rec := pl.w.Recovered()
		for p, off := range rec.LastOffsets {
			if int(p) != pl.partition {
				return fmt.Errorf("reduce WAL of partition %d: it holds offsets of partition %d", pl.partition, p)
			}
			red.logged[p] = off
		}
		floor := int64(math.MinInt64)
		if !rec.Watermark.IsZero() {
			floor = rec.Watermark.UnixNano()
		}
		ls.floors[pl.partition], low = floor, min(low, floor)
		began, before := time.Now(), sh.set.size()
		id, n, err := red.replay(pl)
		if err != nil {
			return err
		}
		maxID = max(maxID, id)
		if n > 0 && red.cfg.Logger != nil {
			red.cfg.Logger.Info("reduce recovered its open windows from the WAL", zap.Int("partition", pl.partition),
				zap.Int("entries replayed", n), zap.Int("windows (window, key) reopened", sh.set.size()-before),
				zap.Int64("last offset logged", red.logged[int32(pl.partition)]), zap.Time("watermark floor", rec.Watermark),
				zap.Duration("took", rec.Took+time.Since(began)), zap.Duration("opening took", rec.Took))
		}
	}
	if low != math.MaxInt64 {
		sh.wm = low
	}
	// New sessions take ids above every logged one.
	for ids := red.ids; ; {
		cur := ids.Load()
		if maxID <= cur || ids.CompareAndSwap(cur, maxID) {
			break
		}
	}
	sh.noteOldest()
	return nil
}

// replay adds the entries of one partition's log to the shard's windows
// and returns the highest session id among them and how many entries it
// replayed.
func (red *reduceReplica[In, S, Out]) replay(pl *partLog) (maxID uint64, n int, err error) {
	log := red.spec.Log
	sh := red.shards[0]
	for e, err := range pl.w.Replay() {
		if err != nil {
			return 0, n, fmt.Errorf("reduce WAL replay, partition %d: %w", pl.partition, err)
		}
		if int(e.Partition) != pl.partition {
			return 0, n, fmt.Errorf("reduce WAL replay, partition %d: an entry of partition %d (offset %d)", pl.partition, e.Partition, e.Offset)
		}
		m := vertex.Message[In]{ID: e.ID, EventTime: e.EventTime, Keys: e.Keys}
		if err := log.Codec.Decode(e.Value, &m.Value); err != nil {
			return 0, n, fmt.Errorf("reduce WAL replay: partition %d offset %d: value with codec %s: %w", e.Partition, e.Offset, log.Codec.Name(), err)
		}
		sh.key = keys.Append(sh.key[:0], m.Keys)
		sh.set.replay(&m, sh.key, e.Windows)
		for _, w := range e.Windows {
			maxID = max(maxID, w.Session)
		}
		n++
	}
	return maxID, n, nil
}

// alreadyLogged reports whether the message at partition and offset is in
// the log from before a restart (a redelivery).
func (red *reduceReplica[In, S, Out]) alreadyLogged(partition int, offset int64) bool {
	last, ok := red.logged[int32(partition)]
	return ok && offset <= last
}
