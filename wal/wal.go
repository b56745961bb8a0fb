package wal

import (
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnel-dev/runnel/internal/fsutil"
	tidwall "github.com/tidwall/wal"
	"go.uber.org/zap"
)

// WAL is the write-ahead log of one reduce replica and its partition set.
// Open it, Replay it, then Append and GC from any number of goroutines;
// Close it last. Its methods are safe for concurrent use.
type WAL struct {
	root string
	cfg  config
	lock *os.File // flock on root while open

	// What Open found; immutable after Open.
	recovered Recovered
	replay    replaySnapshot

	// The group commit: appenders hand requests to the committer goroutine,
	// which owns the log state below (see commit.go).
	reqs     chan *request
	compacts chan chan error
	stop     chan struct{} // closed by Close: no new requests
	errc     chan error    // the committer's exit error, for Close (buffered)
	done     chan struct{} // closed when the committer has exited
	appended atomic.Bool   // a request reached the committer

	// replayMu keeps compaction from removing the generation a Replay reads:
	// Replay holds it shared, compaction tries it exclusively (and skips a
	// periodic compaction rather than wait, so an Append from inside a
	// Replay loop cannot deadlock).
	replayMu sync.RWMutex

	// Owned by the committer goroutine (by Open before it starts).
	running  *compaction // the compaction in progress, nil when none
	gen      uint64
	marker   uint64 // the last index the live generation's CLOSED records, 0: none
	log      *tidwall.Log
	batch    tidwall.Batch
	last     uint64               // index of the last entry
	batchID  uint64               // id of the last write batch
	tail     int64                // bytes of the last segment, mirroring tidwall/wal's rollover
	closed   map[windowKey]Window // windows GC'd in this generation
	cp       checkpoint           // running watermark and offsets
	genBytes int64                // bytes of the generation's frames
	keptSize int64                // genBytes right after the last compaction

	stats struct {
		batches, entries, compactions       atomic.Int64
		compactFailures, logBytes, segments atomic.Int64
	}

	failMu  sync.Mutex
	failErr error // why the committer stopped, if not Close

	closeOnce sync.Once
	closeErr  error

	metaMu sync.Mutex // serializes SetMetadata
}

// requestQueue is how many requests wait for the committer while it writes,
// before appenders block in the channel send.
const requestQueue = 256

// Recovered is what Open found in the log, for the reduce to resume from.
type Recovered struct {
	// Entries is the number of entries of open windows that Replay yields.
	Entries int
	// LastOffsets holds, per ISB partition, the highest offset ever
	// appended, also of entries compacted away with their closed windows.
	// The ISB redelivers from its committed offset, which lags what the
	// reduce appended: a redelivered message at or below LastOffsets of its
	// partition is already in a replayed window or in an emitted one and
	// must be skipped. This relies on each partition's entries being
	// appended in offset order, as a reader reads them.
	LastOffsets map[int32]int64
	// Watermark is the highest watermark a GC event carried: every window
	// the reduce closed at or below it was emitted, so data for such a
	// window is late and must not open it again.
	Watermark time.Time
	// Repaired describes the torn tail Open cut, nil when there was none;
	// Open logs it too (see Logger).
	Repaired *Repair
	// Clean reports that the log was closed cleanly (Close recorded it)
	// and nothing was written to it since: Open repaired nothing.
	Clean bool
	// Compacted reports that Open rewrote the log without closed windows.
	Compacted bool
	// Created reports that Open found no log in the directory and made an
	// empty one (with the Seed checkpoint, if given). A caller that knows
	// the log existed (a reduce whose input has commits) must not take it
	// for a fresh start.
	Created bool
	// Metadata is the log's metadata record (see the Metadata option): as
	// stored, or as Open recorded it for a new log or one without a record.
	Metadata map[string]string
	// Took is how long Open took to find, check, repair and compact the
	// log (the lock and the start of the committer aside), for a line
	// saying how long a recovery took: Replay's time comes on top.
	Took time.Duration
}

// Stats are counters of an open WAL.
type Stats struct {
	Batches     int64 // write batches: each is one tidwall/wal WriteBatch, one write and one fsync
	Entries     int64 // entries appended (messages and GC events)
	Compactions int64 // compactions done, Open's included
	// CompactFailures counts compactions that failed before switching
	// generations (the log stays as it was and the next one retries);
	// Compact returns such an error, the periodic one only counts it.
	CompactFailures int64
	LogBytes        int64 // bytes of the live generation's entries
	Segments        int64 // segment files of the live generation
}

// Open opens the WAL in dir, creating dir and an empty log when there is
// none. It takes an exclusive lock on dir (ErrLocked if another WAL holds
// it), cuts a torn tail (the batch a crash interrupted, never one a clean
// Close recorded as acknowledged), refuses other damage with a
// *CorruptError or *VersionError without changing anything, and compacts
// away windows closed before the crash or Close. Call Replay next.
func Open(dir string, opts ...Option) (*WAL, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	// flock on the directory: a second Open fails in this process as in
	// another, and the kernel drops the lock when the process dies.
	lock, err := fsutil.LockDir("wal", dir, ErrLocked, errNotHere)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	w := &WAL{
		root: dir, cfg: cfg, lock: lock,
		reqs: make(chan *request, requestQueue), compacts: make(chan chan error),
		stop: make(chan struct{}), errc: make(chan error, 1), done: make(chan struct{}),
		closed: map[windowKey]Window{},
	}
	if err := w.recover(); err != nil {
		if w.log != nil {
			w.log.Close()
		}
		lock.Close()
		return nil, err
	}
	w.recovered.Took = time.Since(began)
	go w.run()
	return w, nil
}

func (w *WAL) genDir() string { return filepath.Join(w.root, genName(w.gen)) }

// recover finds the live generation (making the first one in a new
// directory), checks and repairs it, opens tidwall/wal on it and compacts.
func (w *WAL) recover() error {
	gen, leftovers, err := liveGeneration(w.root)
	if err != nil {
		return err
	}
	meta, noMeta, err := w.checkMeta(gen)
	if err != nil {
		return err
	}
	if gen == 0 {
		seed := &checkpoint{offsets: maps.Clone(w.cfg.seedOffsets), watermark: w.cfg.seedWatermark}
		if seed.offsets == nil {
			seed.offsets = map[int32]int64{}
		}
		if _, err := w.build(1, seed, 0, nil); err != nil {
			return err
		}
		gen = 1
		w.recovered.Created = true
	}
	w.gen = gen
	dir := w.genDir()
	if w.marker, err = readClosed(dir); err != nil {
		return err
	}
	removeHintTemp(dir)
	segs, hint, err := listSegments(dir)
	if err != nil {
		return err
	}
	found, err := walk(dir, segs, hint, 0, walkMode{repair: true, mapped: true}, w.load)
	if err != nil {
		return err
	}
	if found.next == 1 {
		return corrupt(dir, 1, -1, "the generation has no checkpoint entry")
	}
	if err := checkClosed(segs, w.marker, found); err != nil {
		return err
	}
	// The live generation passed its checks: only now may what was
	// around it go (a refusal changes nothing on disk).
	for _, p := range leftovers {
		w.cfg.log.Info("wal: removing what a compaction left behind", zap.String("dir", p))
	}
	if err := removeAll(leftovers); err != nil {
		return err
	}
	if t := found.tear; t != nil {
		if err := cutTail(t); err != nil {
			return err
		}
		w.recovered.Repaired = t.report()
		w.logRepair(t)
	}
	w.recovered.Clean = w.marker != 0 && found.tear == nil && found.next-1 == w.marker
	w.last, w.tail, w.genBytes = found.next-1, found.tailSize, found.bytes
	w.keptSize = w.genBytes
	if err := w.openLog(); err != nil {
		return err
	}
	if !found.ended {
		w.cfg.log.Info("wal: ending the write batch a crash cut short", zap.String("dir", dir), zap.Uint64("after entry", w.last))
		if err := w.endBatch(); err != nil {
			return err
		}
	}
	if len(w.closed) > 0 {
		if err := w.compact(); err != nil {
			return err
		}
		w.recovered.Compacted = true
	}
	if noMeta {
		// Last: a log is recorded only once it is there (a crash before
		// leaves a generation without a record, which the next Open adopts).
		if err := writeMeta(w.root, meta); err != nil {
			return err
		}
	}
	w.recovered.Metadata = meta
	w.recovered.LastOffsets = maps.Clone(w.cp.offsets)
	w.recovered.Watermark = w.cp.watermark
	w.recovered.Entries = w.replay.entries
	w.replay.dir, w.replay.limit = w.genDir(), w.last
	return nil
}

// endBatch appends, durably, an empty GC event that ends the last write
// batch, which a crash left without its last entries. Torn-tail repair
// relies on every batch but the one in flight being ended: without this,
// damage at the start of the next batch would look like damage inside this
// one, followed by an intact later batch, and a later Open would refuse it.
func (w *WAL) endBatch() error {
	e := appendGC(nil, &gcEvent{})
	seal(e, w.batchID, flagBatchEnd)
	w.last++
	if err := w.log.Write(w.last, e); err != nil { // fsyncs
		return fmt.Errorf("wal: end the batch a crash cut short: %w", err)
	}
	w.genBytes += frameSize(e)
	if cycled := w.beginBatch(); w.addFrame(frameSize(e)) || cycled {
		return w.recordRollover()
	}
	return nil
}

// load takes in one entry found by Open's walk.
func (w *WAL) load(r ref) error {
	if (r.index == 1) != (r.h.kind == kindCheckpoint) {
		return corrupt(r.file, r.index, r.off, "entry of kind %d: a generation starts with its checkpoint entry and has only that one", r.h.kind)
	}
	w.batchID = max(w.batchID, r.h.batch)
	switch r.h.kind {
	case kindMessage:
		if len(r.e) < headerSize+12 {
			return corrupt(r.file, r.index, r.off, "message entry of %d bytes", len(r.e))
		}
		w.cp.note(int32(binary.LittleEndian.Uint32(r.e[headerSize:])), int64(binary.LittleEndian.Uint64(r.e[headerSize+4:])))
		w.replay.entries++
	default:
		var d decoder
		rec, err := d.decodeBody(r.h, r.e)
		if err != nil {
			return corrupt(r.file, r.index, r.off, "%v", err)
		}
		if rec.kind == kindCheckpoint {
			w.cp = rec.cp
			break
		}
		w.closeWindows(&rec.gc)
	}
	return nil
}

// note records that partition's offset was appended.
func (c *checkpoint) note(partition int32, offset int64) {
	if old, ok := c.offsets[partition]; !ok || offset > old {
		c.offsets[partition] = offset
	}
}

// closeWindows applies a durable GC event.
func (w *WAL) closeWindows(g *gcEvent) {
	for _, win := range g.windows {
		w.closed[win.key()] = win
	}
	if g.watermark.After(w.cp.watermark) {
		w.cp.watermark = g.watermark
	}
}

// openLog opens tidwall/wal on the live generation, which walk checked (and
// repaired), so tidwall/wal's own check of the last segment passes.
func (w *WAL) openLog() error {
	l, err := tidwall.Open(w.genDir(), &tidwall.Options{SegmentSize: w.cfg.segmentSize, DirPerms: 0o755, FilePerms: 0o644})
	if err != nil {
		return fmt.Errorf("wal: tidwall/wal open %s: %w", w.genDir(), err)
	}
	if last, err := l.LastIndex(); err != nil || last != w.last {
		l.Close()
		return fmt.Errorf("wal: tidwall/wal opened %s with last index %d (%v), the walk found %d", w.genDir(), last, err, w.last)
	}
	w.log = l
	w.stats.logBytes.Store(w.genBytes)
	segs, _, err := listSegments(w.genDir())
	if err != nil {
		return err
	}
	w.stats.segments.Store(int64(len(segs)))
	return nil
}

// Recovered returns what Open found: the same value on every call.
func (w *WAL) Recovered() Recovered { return w.recovered }

// Stats returns the WAL's counters.
func (w *WAL) Stats() Stats {
	return Stats{
		Batches:         w.stats.batches.Load(),
		Entries:         w.stats.entries.Load(),
		Compactions:     w.stats.compactions.Load(),
		CompactFailures: w.stats.compactFailures.Load(),
		LogBytes:        w.stats.logBytes.Load(),
		Segments:        w.stats.segments.Load(),
	}
}

// Done is closed when the WAL stops accepting appends: after Close, or
// when a write failed (Err says why).
func (w *WAL) Done() <-chan struct{} { return w.done }

// Err returns the write error that stopped the WAL, nil while it runs and
// after a Close that was not preceded by a failure.
func (w *WAL) Err() error {
	w.failMu.Lock()
	defer w.failMu.Unlock()
	return w.failErr
}

// Close stops the WAL; it is idempotent and returns the same error each
// time: the write error that stopped the WAL earlier, if any, else an
// error of closing the files or of recording the clean close (CLOSED,
// after which Open takes damage to any entry for corruption, never for a
// torn tail). Appends waiting for the group commit get
// ErrClosed or, if their batch was being written, its result.
func (w *WAL) Close() error {
	w.closeOnce.Do(func() {
		// Stop taking requests; the committer finishes the batch it is
		// writing and exits, reporting the error that stopped it earlier,
		// if one did: Close returns it.
		close(w.stop)
		w.closeErr = <-w.errc
		// Close tidwall/wal, which fsyncs the tail segment once more.
		if err := w.log.Close(); err != nil && w.closeErr == nil {
			w.closeErr = fmt.Errorf("wal: close: %w", err)
		}
		// Record the clean close, unless the log stopped on an error (a
		// batch may be half written) or the record says so already.
		if w.closeErr == nil && w.marker != w.last {
			if err := writeClosed(w.genDir(), w.last); err != nil {
				w.closeErr = fmt.Errorf("wal: record the clean close: %w", err)
			}
		}
		// Release the lock last: another Open may start right after.
		if err := w.lock.Close(); err != nil && w.closeErr == nil {
			w.closeErr = fmt.Errorf("wal: unlock: %w", err)
		}
	})
	return w.closeErr
}

func sortedPartitions(m map[int32]int64) []int32 {
	return slices.Sorted(maps.Keys(m))
}
