package pipeline

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/forwarder"
	"github.com/runnel-dev/runnel/internal/datadir"
	"github.com/runnel-dev/runnel/internal/vconfig"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/wal"
)

// The reduce WAL on durable storage. A reduce vertex keeps one log per
// partition of its input buffer (see forwarder.ReduceLog for why per
// partition and not per replica):
//
//	{dir}/{pipeline}.wal/{vertex}/
//	    partition-0/        a wal directory: META (the record below), gen-{n}/
//	    partition-1/
//	    ...
//
// Replica r opens the logs of the partitions it reads, so a run with other
// Replicas (the same Partitions) opens the same logs in other replicas and
// every open window reaches the replica that now reads its keys.
//
// Each log's metadata record (wal.Metadata) holds the partition, the
// partition count and the windowing (kind, length, slide, gap, offset,
// allowed lateness). Before any replica reads, every partition's log is
// opened and checked against the vertex:
//
//   - another partition count, or a partition-{p} directory with p at or
//     past the count, is a *ReduceLogError matching ErrReduceLogLayout (the
//     buffer refuses another count too: keys would move between
//     partitions);
//   - another windowing is a *WindowingError (ErrWindowingChanged) saying
//     what is stored and what was asked, as long as the log holds open
//     windows: old and new windows would be mixed. Close them out first: run
//     the old pipeline with EmitOpenWindowsOnStop and cancel it (every open
//     window is emitted as it is), or let its input end; then the log holds
//     none, and the next run records the new windowing;
//   - a log that Open had to create although the vertex's input group has
//     committed past offset 0 on its partition is a *ReduceLogError
//     matching ErrReduceLogMissing: the commits say the reduce logged (and
//     acknowledged) messages there, so the log was deleted or moved, and
//     starting empty would lose its windows silently. A deleted live
//     generation inside a log is refused by wal.Open itself (its META
//     remains). To start the vertex over deliberately, remove its input
//     buffer ({dir}/{pipeline}/{vertex}/) with the log.
//
// Why the commits and not the log's highest offset: a commit past a
// partition's last logged offset is normal (control messages and late
// messages are acknowledged without an entry), so "the log holds less than
// the commits imply" cannot be told from offsets alone without logging
// every acknowledged offset. What can be told is whether the log was there:
// every log records its creation (META) before the replica reads anything,
// so a commit past 0 with no log is always a lost log.
//
// The layout before this one kept a log per replica, replica-{r}-of-{n}.
// Such logs are carried over once, before the first run on the new layout:
// their open windows, highest offsets and GC watermarks are written into
// new partition logs, built in migrating.tmp/, renamed to migrated/ (the
// commit point), moved into place, and the old directories removed; a
// crash at any step resumes or restarts it. Their windowing was not
// recorded: it is taken to be the vertex's. Both layouts side by side
// outside a migration is ErrReduceLogLayout.

// Errors of a reduce vertex's WAL directory, matched with errors.Is.
var (
	// ErrWindowingChanged: a reduce's WAL holds open windows of another
	// windowing than the vertex asks for (a *WindowingError).
	ErrWindowingChanged = errors.New("pipeline: reduce windowing changed while its WAL holds open windows")
	// ErrReduceLogMissing: a reduce's WAL is missing although its input's
	// commits say it held messages (a *ReduceLogError).
	ErrReduceLogMissing = errors.New("pipeline: reduce WAL missing")
	// ErrReduceLogLayout: a reduce's WAL directory does not fit the vertex
	// (another partition count, or directories of two layouts) and cannot
	// be carried over (a *ReduceLogError).
	ErrReduceLogLayout = errors.New("pipeline: reduce WAL does not fit the vertex")
)

// WindowingError reports a reduce whose windowing differs from the one
// its WAL in Dir holds open windows of.
type WindowingError struct {
	Dir           string
	Stored, Asked vertex.Windowing
	Open          int // messages of open windows in the log
}

func (e *WindowingError) Error() string {
	return fmt.Sprintf("pipeline: reduce WAL %s holds %d messages of open windows of %s, the vertex asks for %s: "+
		"close them out first with the stored windowing (cancel a run with EmitOpenWindowsOnStop, or let its input end)",
		e.Dir, e.Open, describeWindowing(e.Stored), describeWindowing(e.Asked))
}

// Is makes errors.Is(err, ErrWindowingChanged) true.
func (e *WindowingError) Is(target error) bool { return target == ErrWindowingChanged }

// ReduceLogError reports a reduce WAL directory that cannot be used as it
// is: Kind is ErrReduceLogMissing or ErrReduceLogLayout.
type ReduceLogError struct {
	Dir    string
	Kind   error
	Reason string
}

func (e *ReduceLogError) Error() string { return fmt.Sprintf("%v: %s: %s", e.Kind, e.Dir, e.Reason) }

// Is matches Kind.
func (e *ReduceLogError) Is(target error) bool { return target == e.Kind }

// EmitOpenWindowsOnStop makes a cancelled run emit every open window of
// its reduce vertices as it is, on durable storage too, instead of
// leaving them in the WAL for the next run: the way to close out windows
// before changing a reduce's windowing (see WindowingError).
func EmitOpenWindowsOnStop() Option { return func(c *config) { c.emitOnStop = true } }

// The names in a reduce vertex's WAL directory (internal/datadir, which
// cmd/runnel reads too).
const (
	walMigrating = datadir.WALMigrating
	walMigrated  = datadir.WALMigrated
)

// The fields of a partition log's metadata record.
const (
	metaPartition    = "partition"
	metaPartitions   = "partitions"
	metaWindowKind   = "window.kind"
	metaWindowLength = "window.length"
	metaWindowSlide  = "window.slide"
	metaWindowGap    = "window.gap"
	metaWindowOffset = "window.offset"
	metaWindowLate   = "window.lateness"
)

var windowKinds = map[string]vertex.WindowKind{
	vertex.FixedWindows.String():   vertex.FixedWindows,
	vertex.SlidingWindows.String(): vertex.SlidingWindows,
	vertex.SessionWindows.String(): vertex.SessionWindows,
}

// partitionMeta is the metadata record of partition p's log.
func partitionMeta(w vertex.Windowing, p, partitions int) map[string]string {
	return map[string]string{
		metaPartition:    strconv.Itoa(p),
		metaPartitions:   strconv.Itoa(partitions),
		metaWindowKind:   w.Kind.String(),
		metaWindowLength: w.Length.String(),
		metaWindowSlide:  w.Slide.String(),
		metaWindowGap:    w.Gap.String(),
		metaWindowOffset: w.Offset.String(),
		metaWindowLate:   w.AllowedLateness.String(),
	}
}

// storedWindowing reads the windowing back from a metadata record (a
// field that does not parse stays zero: the record still differs).
func storedWindowing(m map[string]string) vertex.Windowing {
	d := func(k string) time.Duration { v, _ := time.ParseDuration(m[k]); return v }
	return vertex.Windowing{Kind: windowKinds[m[metaWindowKind]], Length: d(metaWindowLength), Slide: d(metaWindowSlide),
		Gap: d(metaWindowGap), Offset: d(metaWindowOffset), AllowedLateness: d(metaWindowLate)}
}

func describeWindowing(w vertex.Windowing) string {
	s := w.Kind.String()
	switch w.Kind {
	case vertex.FixedWindows:
		s += fmt.Sprintf("(%v, offset %v", w.Length, w.Offset)
	case vertex.SlidingWindows:
		s += fmt.Sprintf("(%v every %v, offset %v", w.Length, w.Slide, w.Offset)
	case vertex.SessionWindows:
		s += fmt.Sprintf("(gap %v", w.Gap)
	default:
		s += "("
	}
	return s + fmt.Sprintf(", allowed lateness %v)", w.AllowedLateness)
}

// logsReduce reports whether a reduce on storage s keeps a WAL: on
// durable storage (Run refuses durable storage that has no ReduceLog).
func logsReduce(s Storage) bool { return s.Durable() }

// reduceConcurrency applies the Concurrency of a reduce vertex with options
// c on storage s: with a WAL it runs one shard, so 1 when not given, and a
// given Concurrency above 1 is refused. Why one shard: the log skips a
// redelivered message whose offset is at or below the highest logged for
// its partition (forwarder.ReduceLog), which needs each partition's
// entries appended in offset order; concurrent shards would interleave
// them, and after a crash that left a later entry durable and an earlier
// one not, the earlier message would be skipped on redelivery.
func reduceConcurrency(s Storage, c *forwarder.Options) error {
	if !logsReduce(s) || c.Concurrency == 1 {
		return nil
	}
	if c.Set&vconfig.Concurrency != 0 {
		return &isb.OptionError{Package: "pipeline", Option: "Concurrency", Value: c.Concurrency,
			Reason: "a reduce on durable storage runs one shard: its WAL needs each partition's entries in offset order"}
	}
	c.Concurrency = 1
	return nil
}

// reduceLogs are the WALs of one reduce vertex in one run: opened and
// checked by the vertex's prepare step, before any vertex runs (a refusal
// starts nothing, so nothing is read that the reduce could not log), then
// handed out by partition to the replicas, which close them.
type reduceLogs struct {
	logs []*wal.WAL // by partition; nil on memory storage
	ids  atomic.Uint64
}

// forReplica returns the logs of replica r's partitions.
func (rl *reduceLogs) forReplica(n *node, r int) map[int]*wal.WAL {
	logs := map[int]*wal.WAL{}
	for _, part := range n.in.assigned(r) {
		logs[part] = rl.logs[part]
	}
	return logs
}

// closeAll closes every log, for a run that does not start.
func (rl *reduceLogs) closeAll() {
	for _, l := range rl.logs {
		if l != nil {
			l.Close()
		}
	}
	rl.logs = nil
}

// open opens and checks every partition's log of n (see the layout above).
func (rl *reduceLogs) open(rt *runtime, p *Pipeline, n *node, w vertex.Windowing) error {
	dir, err := rt.cfg.storage.ReduceLog(p.name, n.name)
	if err != nil {
		return fmt.Errorf("reduce WAL: %w", err)
	}
	if dir == "" {
		return fmt.Errorf("%w: %s is durable but keeps no reduce log: a reduce there would lose its windows in a crash", ErrStorage, rt.cfg.storage)
	}
	parts := n.cfg.Partitions
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("reduce WAL: %w", err)
	}
	log := rt.log.With(zap.String("vertex", n.name))
	if err := checkLayout(dir, parts, w, log); err != nil {
		return err
	}
	// Every missing log first: a refusal opens (and creates) nothing.
	var errs []error
	for part := range parts {
		if err := checkLogExists(partitionDir(dir, part), part, n); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	logs := make([]*wal.WAL, parts)
	for part := range parts {
		l, err := openPartitionLog(dir, part, parts, w, log, wal.OnCommit(n.obs.walCommit.Observe))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		logs[part] = l
	}
	if len(errs) > 0 {
		for _, l := range logs {
			if l != nil {
				errs = append(errs, l.Close())
			}
		}
		return errors.Join(errs...)
	}
	rl.logs = logs
	rl.ids.Store(uint64(time.Now().UnixNano()))
	return nil
}

func partitionDir(dir string, part int) string {
	return filepath.Join(dir, datadir.WALPartition(part))
}

// openPartitionLog opens partition part's log and checks it against the
// vertex.
func openPartitionLog(dir string, part, parts int, w vertex.Windowing, log *zap.Logger, opts ...wal.Option) (*wal.WAL, error) {
	pdir := partitionDir(dir, part)
	asked := partitionMeta(w, part, parts)
	// The WAL logs what its recovery repaired.
	l, err := wal.Open(pdir, append([]wal.Option{wal.Metadata(asked), wal.Logger(log.With(zap.Int("partition", part)))}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("reduce WAL of partition %d: %w", part, err)
	}
	if err := checkPartitionLog(l, pdir, part, asked, log); err != nil {
		return nil, errors.Join(err, l.Close())
	}
	rec := l.Recovered()
	if rec.Entries > 0 || rec.Repaired != nil || rec.Created {
		log.Info("reduce WAL opened", zap.Int("partition", part), zap.Int("open window messages", rec.Entries),
			zap.Bool("created", rec.Created), zap.Any("repaired", rec.Repaired), zap.Time("watermark", rec.Watermark))
	}
	return l, nil
}

// checkLogExists refuses to create partition part's log, before anything
// is written, when the vertex's input has commits on the partition: the
// reduce acknowledged messages there only once they were in the log.
func checkLogExists(pdir string, part int, n *node) error {
	ok, err := wal.Exists(pdir)
	if err != nil || ok {
		return err
	}
	committed, err := n.in.committed(part)
	if err != nil {
		return fmt.Errorf("reduce WAL of partition %d: %w", part, err)
	}
	if committed == 0 {
		return nil // a new log: nothing was acknowledged
	}
	return &ReduceLogError{Dir: pdir, Kind: ErrReduceLogMissing, Reason: fmt.Sprintf(
		"the vertex's input group has committed partition %d up to offset %d, so this log held its messages, "+
			"but there is none: it was deleted or moved (restore it; to start the vertex over without its windows, "+
			"remove its input buffer directory as well)", part, committed)}
}

// checkPartitionLog compares an open log's record with what the vertex
// asks.
func checkPartitionLog(l *wal.WAL, pdir string, part int, asked map[string]string, log *zap.Logger) error {
	rec := l.Recovered()
	stored := rec.Metadata
	if stored[metaPartition] != asked[metaPartition] || stored[metaPartitions] != asked[metaPartitions] {
		return &ReduceLogError{Dir: pdir, Kind: ErrReduceLogLayout, Reason: fmt.Sprintf(
			"the log records partition %q of %q, the vertex reads partition %s of %s", stored[metaPartition], stored[metaPartitions],
			asked[metaPartition], asked[metaPartitions])}
	}
	if maps.Equal(stored, asked) {
		return nil
	}
	if rec.Entries > 0 {
		return &WindowingError{Dir: pdir, Stored: storedWindowing(stored), Asked: storedWindowing(asked), Open: rec.Entries}
	}
	// No open window of the old windowing: the new one takes over.
	if err := l.SetMetadata(asked); err != nil {
		return fmt.Errorf("reduce WAL of partition %d: %w", part, err)
	}
	log.Info("reduce WAL records a new windowing (the log held no open window)", zap.Int("partition", part),
		zap.String("was", describeWindowing(storedWindowing(stored))), zap.String("now", describeWindowing(storedWindowing(asked))))
	return nil
}
