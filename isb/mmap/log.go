package mmap

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnel-dev/runnel/internal/fsutil"
	"github.com/runnel-dev/runnel/isb"
)

// producerCheckpointEvery bounds how far recovery scans: the producer
// checkpoint is rewritten once this many bytes were flushed past it (and
// at every rollover and Close), so the scan on open covers at most this
// much, whatever the size of the retained log.
const producerCheckpointEvery = 4 << 20

// writePos is where the appender stands: the active segment, the byte
// position of the next record in it, the start of the last record there
// (-1 if none) and the offset of the next record.
type writePos struct {
	seg  *segment
	pos  int
	last int
	tail int64
}

// partition is the isb.Log of one partition directory.
type partition[T any] struct {
	b   *Backend[T]
	id  int
	dir string

	// closeMu: Append and Read hold it shared while they touch mappings;
	// Close takes it exclusively before unmapping.
	closeMu sync.RWMutex
	closed  bool

	// segMu guards segs. Readers hold it shared while they decode from a
	// mapping, so Release cannot unmap a segment under them.
	segMu sync.RWMutex
	segs  []*segment // ascending; the last is the active one

	head atomic.Int64
	tail atomic.Int64
	pub  atomic.Pointer[writePos] // what readers and flushers may use
	// written is where the last record in the mapping ends: ahead of pub
	// while its appenders wait for the flush that publishes them.
	written atomic.Pointer[writePos]

	// appendMu serializes appenders while they copy records into the
	// mapping (not while they wait for a flush); it guards the scratch
	// below. It is taken before flushMu, never after.
	appendMu sync.Mutex
	sealed   bool // under closeMu: Seal ran, every Append is ErrClosed
	scratch  []byte
	ends     []int
	pos      []uint32
	one      [1]T // AppendOne's batch

	// flushes counts flushes (fdatasync) that made records durable (rollovers
	// included): the test of group flushes counts them.
	flushes atomic.Int64

	// flushMu orders flushes, rollovers and producer checkpoints.
	flushMu sync.Mutex
	durable writePos // flushed to disk
	ckpt    writePos // last producer checkpoint written
	// clean: the producer checkpoint on disk says nothing was written
	// past it (Close wrote it, or Open found it so). The first Append
	// clears it on disk before it writes, so that recovery knows when to
	// cut off what may lie past the tail.
	clean  atomic.Bool
	failed error // sticky: an I/O error left durability unknown
	// failedCopy points at failed once it is set, for loadFailed.
	failedCopy atomic.Pointer[error]

	// commitMu guards commits and serializes consumer checkpoint writes.
	commitMu sync.Mutex
	commits  map[string]int64

	releaseMu sync.Mutex // serializes retention
}

var (
	_ isb.Log[int]  = (*partition[int])(nil)
	_ isb.Completer = (*partition[int])(nil)
)

// Head is the first retained offset; Release moves it.
func (p *partition[T]) Head() int64 { return p.head.Load() }

// Tail is the offset of the next append; everything below is readable.
func (p *partition[T]) Tail() int64 { return p.tail.Load() }

// Count is to-from: mmap offsets are contiguous.
func (p *partition[T]) Count(from, to int64) int64 { return to - from }

// Append encodes items and writes them after the tail; the Write
// completes once they are flushed as the flush policy requires and
// published (see flush.go for how writers that arrive together share one
// flush, and how a writer overlaps a flush with its next writes). Under
// Interval they are published at once and the Write is complete. An encode
// error, an item too large for a segment or a failure to create a segment
// stores nothing. Append is safe for concurrent use (Caps.Concurrent).
func (p *partition[T]) Append(items []T) (isb.Write, error) { return p.append(items, nil) }

// AppendOne is Append of one item; it spares the topic a slice per item.
func (p *partition[T]) AppendOne(item T) (isb.Write, error) { return p.append(nil, &item) }

// Complete returns once the records up to last are flushed as the flush
// policy requires and published: the Write of an Append whose last item
// is at last. After Close it returns
// isb.ErrClosed; after Seal it still publishes what was written before.
// A flush runs to its end whatever ctx does: it is shared by the writers
// that arrived with it.
func (p *partition[T]) Complete(_ context.Context, last int64) (int64, error) {
	p.closeMu.RLock()
	defer p.closeMu.RUnlock()
	if p.closed {
		return -1, isb.ErrClosed
	}
	if err := p.publishDurable(last + 1); err != nil {
		return -1, err
	}
	return last, nil
}

// Watch does nothing: a partition belongs to one process (the topic
// directory's lock), whose topic wakes its readers after its own appends.
func (p *partition[T]) Watch(func()) {}

// append is Append of items, or of *one when items is nil.
func (p *partition[T]) append(items []T, one *T) (isb.Write, error) {
	p.closeMu.RLock()
	defer p.closeMu.RUnlock()
	first, end, err := p.write(items, one)
	switch {
	case err != nil:
		return isb.Write{}, err
	case end == first || p.b.cfg.flush.kind == flushInterval:
		return isb.Completed(end - 1), nil // published by writeLocked
	}
	return isb.Deferred(p, end-1), nil
}

// write copies items (or *one when items is nil) into the mapping under
// appendMu. The caller holds closeMu for reading.
func (p *partition[T]) write(items []T, one *T) (first, end int64, err error) {
	if p.closed || p.sealed {
		return 0, 0, isb.ErrClosed
	}
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if one != nil {
		p.one[0] = *one
		items = p.one[:]
	}
	first, end, err = p.writeLocked(items)
	if one != nil {
		var zero T
		p.one[0] = zero // do not keep the item alive
	}
	return first, end, err
}

// writeLocked encodes items and copies them into the mapping after the
// last written record, under appendMu. It returns the offset of the first
// and the offset after the last. Under Interval it publishes them; under
// Immediate and Batch publishDurable does, after the flush that covers
// them, so that an Append that fails leaves its items invisible (the
// topic releases their capacity and the producer may send them again).
func (p *partition[T]) writeLocked(items []T) (first, end int64, err error) {
	if err := p.loadFailed(); err != nil {
		return 0, 0, err
	}
	cur := *p.written.Load()
	first = cur.tail
	if len(items) == 0 {
		return first, first, nil
	}
	if err := p.encode(items, first); err != nil {
		return 0, 0, err
	}
	// Plan where every record goes and create the segments the batch
	// needs before touching the log, so a failure leaves no trace.
	var fresh []*segment
	pos, capacity := cur.pos, len(cur.seg.data)
	start := 0
	for i, end := range p.ends {
		if pos+end-start > capacity {
			s, err := createSegment(p.dir, first+int64(i), p.b.cfg.segmentSize)
			if err != nil {
				for _, s := range fresh {
					s.discard()
				}
				return 0, 0, err
			}
			fresh = append(fresh, s)
			pos, capacity = segmentHeaderSize, len(s.data)
		}
		pos += end - start
		start = end
	}
	if p.clean.Load() {
		if err := p.markDirty(); err != nil {
			for _, s := range fresh {
				s.discard()
			}
			return 0, 0, err
		}
	}
	locked := len(fresh) > 0
	if locked {
		// Rollovers are flush boundaries; holding flushMu until the
		// batch is written (and, under Interval, published) keeps
		// flushers off a half-switched state: a flusher always finds
		// written in the segment durable stands in, or a later one.
		p.flushMu.Lock()
		defer p.flushMu.Unlock()
	}
	err = func() error {
		// The records of the batch that go to one segment lie together in
		// scratch: one write each (see segment.go for why not through the
		// mapping).
		start, run, runPos := 0, 0, cur.pos
		p.pos = p.pos[:0]
		for i, end := range p.ends {
			rec := p.scratch[start:end]
			if cur.pos+len(rec) > cur.seg.size {
				if err := cur.seg.writeAt(p.scratch[run:start], runPos); err != nil {
					return err
				}
				cur.seg.addPositions(p.pos)
				p.pos = p.pos[:0]
				next := fresh[0]
				fresh = fresh[1:]
				if err := p.rolloverLocked(&cur, next, first+int64(i)); err != nil {
					return err
				}
				run, runPos = start, cur.pos
			}
			start = end
			p.pos = append(p.pos, uint32(cur.pos))
			cur.last = cur.pos
			cur.pos += len(rec)
		}
		if err := cur.seg.writeAt(p.scratch[run:start], runPos); err != nil {
			return err
		}
		cur.seg.addPositions(p.pos)
		return nil
	}()
	if err != nil {
		for _, s := range fresh {
			s.discard()
		}
		// Records may be half written and a segment half sealed:
		// only a reopen (recovery) can tell what is on disk.
		if !locked {
			p.flushMu.Lock()
			defer p.flushMu.Unlock()
		}
		return 0, 0, p.failLocked(err)
	}
	cur.tail = first + int64(len(items))
	p.written.Store(&cur)
	if p.b.cfg.flush.kind == flushInterval {
		p.pub.Store(&cur)
		p.tail.Store(cur.tail)
	}
	return first, cur.tail, nil
}

// encode frames every item as a record into p.scratch; p.ends holds where
// each ends.
func (p *partition[T]) encode(items []T, first int64) error {
	maxRecord := int(p.b.cfg.segmentSize) - segmentHeaderSize
	buf := p.scratch[:0]
	p.ends = p.ends[:0]
	for i, it := range items {
		start := len(buf)
		buf = append(buf, make([]byte, recordHeaderSize)...)
		var err error
		buf, err = p.b.cfg.codec.Append(buf, it)
		if err != nil {
			p.scratch = buf[:0]
			return fmt.Errorf("mmap: partition %d: item %d of the batch: %w", p.id, i, err)
		}
		buf = append(buf, 0, 0, 0, 0)
		if n := len(buf) - start; n > maxRecord {
			p.scratch = buf[:0]
			return &TooLargeError{Index: i, Record: n, Max: maxRecord}
		}
		frameRecord(buf[start:], first+int64(i))
		p.ends = append(p.ends, len(buf))
	}
	p.scratch = buf
	return nil
}

// rolloverLocked flushes and seals the active segment at offset next,
// publishes s as the new active segment and checkpoints the producer there.
// cur is the appender's position and moves to s.
// On an error before s joins the log, s is discarded (its mapping and
// temporary file would otherwise outlive the failed Append).
func (p *partition[T]) rolloverLocked(cur *writePos, s *segment, next int64) error {
	p.flushes.Add(1)
	err := cur.seg.sync(p.durablePosIn(cur.seg), cur.pos)
	if err == nil {
		err = cur.seg.seal(next)
	}
	if err == nil {
		err = s.publish()
	}
	if err != nil {
		s.discard()
		return err
	}
	// The new segment's index will likely hold as many records as the
	// last one: sized once, it does not grow (and copy) twenty times.
	cur.seg.mu.Lock()
	hint := len(cur.seg.eager)
	cur.seg.mu.Unlock()
	s.eager = make([]uint32, 0, hint)
	p.segMu.Lock()
	p.segs = append(p.segs, s)
	p.segMu.Unlock()
	*cur = writePos{seg: s, pos: segmentHeaderSize, last: -1, tail: next}
	p.durable = *cur
	return p.checkpointProducerLocked(false)
}

// durablePosIn is where unflushed bytes of seg start.
func (p *partition[T]) durablePosIn(seg *segment) int {
	if p.durable.seg == seg {
		return p.durable.pos
	}
	return segmentHeaderSize
}

// flushLocked flushes everything published and, once enough was flushed
// since the last one, writes the producer checkpoint. The producer
// checkpoint therefore never points past flushed records.
func (p *partition[T]) flushLocked() error { return p.flushToLocked(p.pub.Load()) }

// flushToLocked is flushLocked up to st: the published position, or the
// one Append is about to publish.
func (p *partition[T]) flushToLocked(st *writePos) error {
	if p.failed != nil {
		return p.failed
	}
	if st.tail <= p.durable.tail {
		// Nothing new, or a rollover made it durable already (durable
		// then stands in a later segment than st: it never moves back).
		return nil
	}
	p.flushes.Add(1)
	var start time.Time
	if p.b.cfg.onFlush != nil {
		start = time.Now()
	}
	if err := st.seg.sync(p.durablePosIn(st.seg), st.pos); err != nil {
		return p.failLocked(err)
	}
	if p.b.cfg.onFlush != nil {
		p.b.cfg.onFlush(time.Since(start))
	}
	p.durable = *st
	if p.ckpt.seg != st.seg || st.pos-p.ckpt.pos >= producerCheckpointEvery {
		return p.checkpointProducerLocked(false)
	}
	return nil
}

// flush flushes everything published.
func (p *partition[T]) flush() error {
	p.flushMu.Lock()
	defer p.flushMu.Unlock()
	return p.flushLocked()
}

// checkpointProducerLocked records the durable position in producer.offset.
func (p *partition[T]) checkpointProducerLocked(clean bool) error {
	d := p.durable
	var flag int64
	if clean {
		flag = 1
	}
	if err := writeCheckpoint(filepath.Join(p.dir, producerFile), kindProducer,
		checkpoint{d.tail, d.seg.first, int64(d.pos), int64(d.last), flag}); err != nil {
		return p.failLocked(err)
	}
	p.ckpt = d
	p.clean.Store(clean)
	return nil
}

// markDirty clears the clean mark of the producer checkpoint before the
// first write after a clean open.
func (p *partition[T]) markDirty() error {
	p.flushMu.Lock()
	defer p.flushMu.Unlock()
	if !p.clean.Load() {
		return nil
	}
	return p.checkpointProducerLocked(false)
}

// failLocked makes err sticky: after a failed write, flush or checkpoint nobody
// knows what reached the disk, so the partition refuses further appends
// until it is reopened and recovered.
func (p *partition[T]) failLocked(err error) error {
	if p.failed == nil {
		p.failed = fmt.Errorf("mmap: partition %d failed, reopen the topic: %w", p.id, err)
		p.failedCopy.Store(&p.failed)
	}
	return p.failed
}

// loadFailed returns the sticky failure without taking flushMu, so that
// appenders copy their records while a flush runs.
func (p *partition[T]) loadFailed() error {
	if err := p.failedCopy.Load(); err != nil {
		return *err
	}
	return nil
}

// Read decodes up to max records from offset into buf; max < 1 is
// ErrReadSize, as in isb/memory. A record that fails its checks is a
// *CorruptError naming the segment and byte position; the records before it
// in the batch are returned first.
func (p *partition[T]) Read(_ context.Context, offset int64, max int, buf []T) (int64, []T, error) {
	items, err := p.read(offset, max, buf)
	return offset, items, err
}

// read is Read: mmap offsets are contiguous, so its items are at offset.
func (p *partition[T]) read(offset int64, max int, buf []T) ([]T, error) {
	p.closeMu.RLock()
	defer p.closeMu.RUnlock()
	if p.closed {
		return nil, isb.ErrClosed
	}
	tail := p.tail.Load()
	if head := p.head.Load(); offset < head || offset >= tail {
		return nil, fmt.Errorf("%w: partition %d: read at %d, retained [%d, %d)", isb.ErrOutOfRange, p.id, offset, head, tail)
	}
	if max < 1 {
		return nil, fmt.Errorf("%w: partition %d: read of %d items", ErrReadSize, p.id, max)
	}
	if len(buf) < max {
		buf = make([]T, max)
	}
	p.segMu.RLock()
	defer p.segMu.RUnlock()
	var out []T
	err := guarded(func() (err error) {
		out, err = p.readLocked(offset, max, buf, tail)
		return err
	}, p.locate)
	return out, err
}

// locate names the segment whose mapping holds addr, for a *FaultError.
// Its caller holds segMu, or is recovery, which owns the partition.
func (p *partition[T]) locate(addr uintptr) (string, int64) { return locateIn(p.segs, addr) }

// readLocked is Read under segMu.
func (p *partition[T]) readLocked(offset int64, max int, buf []T, tail int64) ([]T, error) {
	i := sort.Search(len(p.segs), func(i int) bool { return p.segs[i].first > offset }) - 1
	if i < 0 {
		return nil, fmt.Errorf("%w: partition %d: offset %d was released", isb.ErrOutOfRange, p.id, offset)
	}
	seg, end := p.segs[i], tail
	if i+1 < len(p.segs) {
		end = min(end, p.segs[i+1].first)
	}
	n := int(min(int64(max), end-offset))
	pos, err := seg.position(offset)
	if err != nil {
		return nil, err
	}
	for k := range n {
		payload, next, _, reason := decodeRecord(seg.data, pos, offset+int64(k))
		if reason != "" {
			if k > 0 {
				return buf[:k], nil
			}
			return nil, corrupt(seg.path, int64(pos), "offset %d: %s", offset, reason)
		}
		if err := p.b.cfg.codec.Decode(payload, &buf[k]); err != nil {
			if k > 0 {
				return buf[:k], nil
			}
			return nil, &CorruptError{Corruption: fsutil.Corruptf(seg.path, int64(pos), "offset %d: the record is intact but its payload does not decode: %v", offset+int64(k), err), Err: err}
		}
		pos = next
	}
	return buf[:n], nil
}

// Commit flushes the log up to offset (so a commit never survives a crash
// that loses what it covers) and replaces the group's checkpoint.
func (p *partition[T]) Commit(_ context.Context, group string, offset int64) error {
	p.closeMu.RLock()
	defer p.closeMu.RUnlock()
	if p.closed {
		return isb.ErrClosed
	}
	if tail := p.tail.Load(); offset > tail {
		return fmt.Errorf("%w: partition %d: commit of group %q at %d, beyond the tail %d", isb.ErrOutOfRange, p.id, group, offset, tail)
	}
	p.commitMu.Lock()
	defer p.commitMu.Unlock()
	prev, ok := p.commits[group]
	if ok && offset <= prev {
		return nil
	}
	p.flushMu.Lock()
	var err error
	if p.durable.tail < offset {
		err = p.flushLocked()
	} else if p.failed != nil {
		err = p.failed
	}
	p.flushMu.Unlock()
	if err != nil {
		return err
	}
	if err := p.writeCommit(group, offset, ok); err != nil {
		return err
	}
	p.commits[group] = offset
	p.b.groups.Add(group)
	return nil
}

// writeCommit stores group's commit. The first commit of a group builds
// its directory under a temporary name with the checkpoint inside and
// renames it into place, so that a group directory always holds a
// checkpoint: recovery can then tell a lost commit from no commit.
func (p *partition[T]) writeCommit(group string, offset int64, known bool) error {
	root := filepath.Join(p.dir, offsetsDir)
	dir := filepath.Join(root, escapeGroup(group))
	if known || pathExists(dir) {
		return writeCheckpoint(filepath.Join(dir, consumerFile), kindConsumer, checkpoint{offset})
	}
	tmp := filepath.Join(root, groupTmpPrefix+escapeGroup(group))
	err := os.RemoveAll(tmp)
	if err == nil {
		err = os.Mkdir(tmp, 0o755)
	}
	if err == nil {
		err = writeCheckpoint(filepath.Join(tmp, consumerFile), kindConsumer, checkpoint{offset})
	}
	if err == nil {
		err = os.Rename(tmp, dir)
	}
	if err == nil {
		err = syncDir(root)
	}
	if err != nil {
		return fmt.Errorf("mmap: partition %d: group %q: %w", p.id, group, err)
	}
	return nil
}

func pathExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Committed returns the stored commit of group (recovered at Open, kept
// in memory since: it never fails).
func (p *partition[T]) Committed(group string) (int64, bool, error) {
	p.commitMu.Lock()
	defer p.commitMu.Unlock()
	if c, ok := p.commits[group]; ok {
		return c, true, nil
	}
	return p.head.Load(), false, nil
}

// deleteGroup removes group's checkpoint directory, makes the removal
// durable and forgets the commit, so Release no longer holds data for it.
func (p *partition[T]) deleteGroup(group string) error {
	p.closeMu.RLock()
	defer p.closeMu.RUnlock()
	if p.closed {
		return isb.ErrClosed
	}
	p.commitMu.Lock()
	defer p.commitMu.Unlock()
	root := filepath.Join(p.dir, offsetsDir)
	dir := filepath.Join(root, escapeGroup(group))
	tmp := filepath.Join(root, groupTmpPrefix+escapeGroup(group))
	// Renamed away first, then removed: a crash half-way leaves either the
	// whole group or a temporary directory that recovery removes, never a
	// group directory without its checkpoint (which recovery reports as a
	// lost commit).
	err := os.RemoveAll(tmp)
	if err == nil {
		if err = os.Rename(dir, tmp); errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	}
	if err == nil {
		err = syncDir(root)
	}
	if err == nil {
		err = os.RemoveAll(tmp)
	}
	if err != nil {
		return fmt.Errorf("mmap: partition %d: delete group %q: %w", p.id, group, err)
	}
	delete(p.commits, group)
	return nil
}

// Release deletes the oldest segments that every group has consumed,
// keeping MaxRetainedConsumedSegments of them. earliest.offset moves (and
// is flushed) before any file is deleted, so a crash in between leaves
// files below it that the next open removes.
func (p *partition[T]) Release(offset int64) error {
	keep := p.b.cfg.retain
	if keep < 0 {
		return nil
	}
	p.closeMu.RLock()
	defer p.closeMu.RUnlock()
	if p.closed {
		return isb.ErrClosed
	}
	// The topic computes offset over the groups it knows; the stored
	// commits are folded in too, so a group persisted on disk but not
	// running in this process still holds its data.
	p.commitMu.Lock()
	for _, c := range p.commits {
		offset = min(offset, c)
	}
	p.commitMu.Unlock()

	p.releaseMu.Lock()
	defer p.releaseMu.Unlock()
	p.segMu.RLock()
	consumed := 0
	for i := 0; i+1 < len(p.segs) && p.segs[i+1].first <= offset; i++ {
		consumed++
	}
	drop := consumed - keep
	var newHead int64
	if drop > 0 {
		newHead = p.segs[drop].first
	}
	p.segMu.RUnlock()
	if drop <= 0 {
		return nil
	}
	if err := writeCheckpoint(filepath.Join(p.dir, earliestFile), kindEarliest, checkpoint{newHead}); err != nil {
		return err
	}
	p.head.Store(newHead)
	p.segMu.Lock()
	dropped := append([]*segment(nil), p.segs[:drop]...)
	p.segs = append(p.segs[:0:0], p.segs[drop:]...)
	p.segMu.Unlock()
	var errs []error
	for _, s := range dropped {
		s.unmap()
		if err := os.Remove(s.path); err != nil {
			errs = append(errs, fmt.Errorf("mmap: delete released segment: %w", err))
		}
	}
	return errors.Join(errs...)
}

// close flushes, checkpoints the producer (so the next open scans nothing)
// and unmaps every segment.
func (p *partition[T]) close() error {
	p.closeMu.Lock()
	defer p.closeMu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	p.flushMu.Lock()
	err := p.flushLocked()
	if err == nil && (p.ckpt != p.durable || !p.clean.Load()) {
		err = p.checkpointProducerLocked(true)
	}
	p.flushMu.Unlock()
	p.segMu.Lock()
	for _, s := range p.segs {
		s.unmap()
	}
	p.segs = nil
	p.segMu.Unlock()
	return err
}
