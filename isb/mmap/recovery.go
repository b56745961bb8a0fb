package mmap

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.uber.org/zap"
)

// openPartition opens partition id of the topic, creating it when its
// directory does not exist, and recovers it. Its cost does not depend on
// how much the log retains: it reads two checkpoints and one header per
// segment, checks the record the producer checkpoint points at, and scans
// forward from there (at most producerCheckpointEvery bytes, plus the rest
// of a segment sealed after the checkpoint).
func (b *Backend[T]) openPartition(id int) (*partition[T], error) {
	dir := filepath.Join(b.topicDir, partitionDirName(id))
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := b.createPartition(dir); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("mmap: open partition: %w", err)
	}
	p := &partition[T]{b: b, id: id, dir: dir, commits: map[string]int64{}}
	// Recovery reads the segments through their mappings, as readers do,
	// and is guarded as they are.
	if err := guarded(p.recover, p.locate); err != nil {
		p.segMu.Lock()
		for _, s := range p.segs {
			s.unmap()
		}
		p.segMu.Unlock()
		return nil, err
	}
	return p, nil
}

// createPartition builds an empty partition in a temporary directory and
// renames it into place, so a crash never leaves a half-made partition.
func (b *Backend[T]) createPartition(dir string) error {
	tmp := dir + tmpSuffix
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("mmap: create partition: %w", err)
	}
	err := os.MkdirAll(filepath.Join(tmp, offsetsDir), 0o755)
	if err == nil {
		var s *segment
		if s, err = createSegment(tmp, 0, b.cfg.segmentSize); err == nil {
			s.unmap()
			err = os.Rename(filepath.Join(tmp, segmentFileName(0)+tmpSuffix), filepath.Join(tmp, segmentFileName(0)))
		}
	}
	if err == nil {
		err = writeCheckpoint(filepath.Join(tmp, earliestFile), kindEarliest, checkpoint{0})
	}
	if err == nil {
		err = writeCheckpoint(filepath.Join(tmp, producerFile), kindProducer, checkpoint{0, 0, segmentHeaderSize, -1, 1})
	}
	if err == nil {
		err = syncDir(filepath.Join(tmp, offsetsDir))
	}
	if err == nil {
		err = os.Rename(tmp, dir)
	}
	if err == nil {
		err = syncDir(b.topicDir)
	}
	if err != nil {
		return fmt.Errorf("mmap: create partition %s: %w", dir, err)
	}
	return nil
}

func (p *partition[T]) recover() error {
	head, firsts, err := p.recoverFiles()
	if err != nil {
		return err
	}
	for _, first := range firsts {
		s, err := openSegment(filepath.Join(p.dir, segmentFileName(first)), first)
		if err != nil {
			return err
		}
		p.segs = append(p.segs, s)
	}
	for i, s := range p.segs[:len(p.segs)-1] {
		nextFirst := p.segs[i+1].first
		if s.next == unsealed {
			return corrupt(s.path, 0, "segment is not sealed but %s follows it", segmentFileName(nextFirst))
		}
		if s.next != nextFirst {
			return corrupt(filepath.Join(p.dir, segmentFileName(s.next)), -1,
				"missing segment: %s ends before offset %d but the next segment file starts at %d", filepath.Base(s.path), s.next, nextFirst)
		}
	}
	cur, clean, err := p.checkProducerCheckpoint(head)
	if err != nil {
		return err
	}
	ckptTail := cur.tail
	if err := p.recoverCommits(); err != nil {
		return err
	}
	if err := p.scanForward(&cur); err != nil {
		return err
	}
	p.keepCommitted(&cur)
	for group, c := range p.commits {
		if c < head || c > cur.tail {
			return corrupt(filepath.Join(p.dir, offsetsDir, escapeGroup(group), consumerFile), -1,
				"group %q committed offset %d, outside the log [%d, %d]", group, c, head, cur.tail)
		}
	}
	p.head.Store(head)
	p.tail.Store(cur.tail)
	p.pub.Store(&cur)
	p.written.Store(&cur)
	p.durable, p.ckpt = cur, cur
	if clean && cur.tail == ckptTail {
		// Closed cleanly: nothing lies past the tail, and opening
		// writes nothing.
		p.clean.Store(true)
	} else {
		if err := p.resetTail(cur); err != nil {
			return err
		}
		// Store the recovered tail so the next open scans nothing.
		if err := p.checkpointProducerLocked(false); err != nil {
			return err
		}
	}
	return nil
}

// keepCommitted extends the tail the scan found over records that a
// group committed: a commit flushes what it covers first, so those records
// were written whole, and the damaged record the scan stopped at is not a
// torn tail. They stay in the log as damaged records (reading them reports
// them); the next append goes where the damage starts. Where the scan
// stopped at never-written bytes, a commit past them is ahead of the log,
// which recover reports.
func (p *partition[T]) keepCommitted(cur *writePos) {
	floor := cur.tail
	for _, c := range p.commits {
		floor = max(floor, c)
	}
	if floor == cur.tail {
		return
	}
	if _, _, empty, _ := cur.seg.decodeWritten(cur.pos, cur.tail); empty {
		return
	}
	p.b.cfg.log.Warn("mmap: damaged records below a group's commit kept in the log: reading them reports them",
		zap.String("segment", cur.seg.path), zap.Int("byte", cur.pos), zap.Int64("from", cur.tail), zap.Int64("to", floor-1))
	cur.seg.eager = appendDamaged(cur.seg.eager, cur.pos, cur.pos, floor-cur.tail)
	cur.tail = floor
}

// recoverFiles removes leftovers of interrupted writes (only the temporary
// names this package writes), reads earliest.offset (rebuilding it from
// the segment files when it is missing or damaged) and returns it with the
// first offsets of the retained segments, ascending.
func (p *partition[T]) recoverFiles() (int64, []int64, error) {
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return 0, nil, fmt.Errorf("mmap: open partition: %w", err)
	}
	var firsts []int64
	for _, e := range entries {
		name := e.Name()
		if first, ok := parseSegmentFileName(name); ok {
			firsts = append(firsts, first)
			continue
		}
		if isOwnTemp(name) {
			// A checkpoint or segment that was never renamed into place.
			if err := os.Remove(filepath.Join(p.dir, name)); err != nil {
				return 0, nil, fmt.Errorf("mmap: remove leftover: %w", err)
			}
			continue
		}
		if name != producerFile && name != earliestFile && name != offsetsDir {
			p.b.cfg.log.Warn("mmap: leaving a file this package did not write", zap.String("file", filepath.Join(p.dir, name)))
		}
	}
	slices.Sort(firsts)
	if len(firsts) == 0 {
		return 0, nil, corrupt(p.dir, -1, "no segment files")
	}
	earliest := filepath.Join(p.dir, earliestFile)
	v, err := readCheckpoint(earliest, kindEarliest)
	var ce *CorruptError
	if errors.Is(err, fs.ErrNotExist) || errors.As(err, &ce) {
		// Retention moves earliest.offset before it deletes a segment,
		// so the first segment file left is the first retained offset.
		p.b.cfg.log.Warn("mmap: rebuilding earliest.offset from the first segment file",
			zap.String("file", earliest), zap.Error(err), zap.Int64("earliest", firsts[0]))
		if err := writeCheckpoint(earliest, kindEarliest, checkpoint{firsts[0]}); err != nil {
			return 0, nil, err
		}
		return firsts[0], firsts, nil
	}
	if err != nil {
		return 0, nil, err
	}
	head := v[0]
	// Retention moves earliest.offset before deleting: finish a deletion
	// a crash interrupted.
	for len(firsts) > 1 && firsts[1] <= head {
		if err := os.Remove(filepath.Join(p.dir, segmentFileName(firsts[0]))); err != nil {
			return 0, nil, fmt.Errorf("mmap: finish retention: %w", err)
		}
		firsts = firsts[1:]
	}
	if firsts[0] < head {
		return 0, nil, corrupt(earliest, -1, "off a segment boundary: offset %d lies inside segment %s", head, segmentFileName(firsts[0]))
	}
	if firsts[0] > head {
		return 0, nil, corrupt(filepath.Join(p.dir, segmentFileName(head)), -1,
			"missing segment: %s says the log starts at offset %d but the first segment starts at %d", earliestFile, head, firsts[0])
	}
	return head, firsts, nil
}

// isOwnTemp reports whether name is a temporary file this package writes
// in a partition directory: a segment or checkpoint before its rename.
func isOwnTemp(name string) bool {
	base, ok := strings.CutSuffix(name, tmpSuffix)
	if !ok {
		return false
	}
	_, seg := parseSegmentFileName(base)
	return seg || base == producerFile || base == earliestFile
}

// checkProducerCheckpoint validates producer.offset against the segments
// without scanning: the segment it names must exist and hold the
// position, and the record just before the position must end there. A
// missing, damaged or inconsistent checkpoint is rebuilt by scanning the
// last segment from its start. A segment shorter than the position is
// truncated: records producer.offset covers were flushed, so their loss is
// a *CorruptError naming the segment. The record before the position was
// flushed too: if it is damaged it stays in the log, and reading it
// reports it.
func (p *partition[T]) checkProducerCheckpoint(head int64) (_ writePos, clean bool, _ error) {
	path := filepath.Join(p.dir, producerFile)
	v, err := readCheckpoint(path, kindProducer)
	var ce *CorruptError
	if errors.Is(err, fs.ErrNotExist) || errors.As(err, &ce) {
		return p.rebuildProducer(path, err.Error())
	}
	if err != nil {
		return writePos{}, false, err
	}
	tail, segFirst, pos, last, flags := v[0], v[1], v[2], v[3], v[4]
	i := slices.IndexFunc(p.segs, func(s *segment) bool { return s.first == segFirst })
	if i < 0 {
		if segFirst > p.segs[len(p.segs)-1].first {
			return writePos{}, false, corrupt(filepath.Join(p.dir, segmentFileName(segFirst)), -1,
				"missing segment: %s says the log reaches offset %d in it", producerFile, tail)
		}
		return p.rebuildProducer(path, fmt.Sprintf("names segment %s, which is not in the log", segmentFileName(segFirst)))
	}
	s := p.segs[i]
	if err := s.ensureMapped(); err != nil {
		return writePos{}, false, err
	}
	if pos > int64(s.size) {
		return writePos{}, false, corrupt(s.path, int64(s.size),
			"truncated: the file ends at byte %d but %s says its records reach byte %d (offset %d)", s.size, producerFile, pos, tail)
	}
	switch {
	case tail < head || tail < segFirst || (s.next != unsealed && tail > s.next):
		return p.rebuildProducer(path, fmt.Sprintf("tail %d lies outside segment %s (log retained from %d)", tail, filepath.Base(s.path), head))
	case pos < segmentHeaderSize:
		return p.rebuildProducer(path, fmt.Sprintf("byte position %d lies in the segment header", pos))
	case tail == segFirst:
		if pos != segmentHeaderSize || last != -1 {
			return p.rebuildProducer(path, fmt.Sprintf("off a record boundary: tail %d starts segment %s but position is %d", tail, filepath.Base(s.path), pos))
		}
	case last < segmentHeaderSize || last >= pos:
		return p.rebuildProducer(path, fmt.Sprintf("off a record boundary: last record at %d, tail position %d", last, pos))
	default:
		_, next, _, reason := s.decodeWritten(int(last), tail-1)
		if reason != "" {
			p.b.cfg.log.Warn("mmap: damaged record before the producer checkpoint: kept, reading it reports it",
				zap.String("segment", s.path), zap.Int64("byte", last), zap.Int64("offset", tail-1), zap.String("reason", reason))
		} else if int64(next) != pos {
			return p.rebuildProducer(path, fmt.Sprintf("off a record boundary: the record at byte %d of %s ends at %d, not at %d", last, filepath.Base(s.path), next, pos))
		}
	}
	// Everything below the checkpointed tail is indexed lazily; what the
	// scan finds from here on is indexed as it goes.
	s.eagerFirst, s.lazyLimit = tail, int(pos)
	return writePos{seg: s, pos: int(pos), last: int(last), tail: tail}, flags == 1, nil
}

// rebuildProducer starts the scan for the tail at the start of the last
// segment, for a producer checkpoint that cannot be used: the records are
// checksummed, so the scan finds the tail the checkpoint would have named.
func (p *partition[T]) rebuildProducer(path, reason string) (writePos, bool, error) {
	s := p.segs[len(p.segs)-1]
	if err := s.ensureMapped(); err != nil {
		return writePos{}, false, err
	}
	p.b.cfg.log.Warn("mmap: rebuilding producer.offset by scanning the last segment",
		zap.String("file", path), zap.String("reason", reason), zap.String("segment", s.path))
	s.eagerFirst = s.first
	return writePos{seg: s, pos: segmentHeaderSize, last: -1, tail: s.first}, false, nil
}

// scanForward advances cur over the records after the producer checkpoint,
// following sealed segments into the next one, and indexes them.
//
// The first record of the active segment that fails its checks is a torn
// tail only if no intact record follows it: a crash leaves nothing but
// never-written bytes after a torn record. A damaged record with intact
// records after it, and any damaged record of a sealed segment (sealing
// flushed it), stays in the log at its offset, indexed at the position
// where it should be, so that reading it is a *CorruptError and the
// records after it stay readable.
func (p *partition[T]) scanForward(cur *writePos) error {
	for {
		s := cur.seg
		limit := int64(math.MaxInt64)
		if s.next != unsealed {
			limit = s.next
		}
		var pos []uint32
		end := s.dataEnd(cur.pos)
		for cur.tail < limit {
			_, next, empty, reason := decodeData(s.data, end, cur.pos, cur.tail)
			if reason == "" {
				pos = append(pos, uint32(cur.pos))
				cur.last, cur.pos = cur.pos, next
				cur.tail++
				continue
			}
			at, found, ok := findRecord(s.data[:end], cur.pos, cur.tail, limit)
			if !ok && s.next == unsealed {
				if !empty {
					p.b.cfg.log.Warn("mmap: cut a torn record at the end of the log",
						zap.String("segment", s.path), zap.Int("byte", cur.pos), zap.Int64("offset", cur.tail), zap.String("reason", reason))
				}
				break
			}
			if !ok {
				at, found = cur.pos, s.next
			}
			p.b.cfg.log.Warn("mmap: damaged records kept in the log: reading them reports them",
				zap.String("segment", s.path), zap.Int("byte", cur.pos), zap.Int64("from", cur.tail), zap.Int64("to", found-1), zap.String("reason", reason))
			pos = appendDamaged(pos, cur.pos, at, found-cur.tail)
			cur.pos, cur.tail = at, found
		}
		s.eager = append(s.eager, pos...)
		if s.next == unsealed {
			return nil
		}
		i := slices.Index(p.segs, s)
		if i == len(p.segs)-1 {
			// Sealed, but the crash came before the next segment was
			// published: create it now.
			n, err := createSegment(p.dir, s.next, p.b.cfg.segmentSize)
			if err != nil {
				return err
			}
			if err := n.publish(); err != nil {
				n.discard()
				return err
			}
			p.segs = append(p.segs, n)
		}
		n := p.segs[i+1]
		if err := n.ensureMapped(); err != nil {
			return err
		}
		*cur = writePos{seg: n, pos: segmentHeaderSize, last: -1, tail: n.first}
		n.eagerFirst = n.first
	}
}

// decodeData is decodeRecord on the data written to a segment, seg[:end]
// with end from dataEnd: recovery never reads the hole after it through
// the mapping, where a full tmpfs has no page to give and the kernel
// answers with SIGBUS. A record cut short by the hole is torn, not the
// empty end of the log.
func decodeData(seg []byte, end, pos int, want int64) (payload []byte, next int, empty bool, reason string) {
	payload, next, empty, reason = decodeRecord(seg[:end], pos, want)
	if empty && pos >= 0 && pos < end && !allZero(seg[pos:min(end, pos+recordOverhead)]) {
		return nil, 0, false, fmt.Sprintf("record cut short at byte %d, where the written data ends", end)
	}
	return payload, next, empty, reason
}

// decodeWritten is decodeData up to the end of the data around pos.
func (s *segment) decodeWritten(pos int, want int64) (payload []byte, next int, empty bool, reason string) {
	return decodeData(s.data, s.dataEnd(max(pos, 0)), pos, want)
}

// appendDamaged indexes count damaged offsets: the first at bad, where its
// record should be, the others (records that cannot be located) at next,
// the intact record after the damage, which holds another offset: reading
// any of them fails its checks and reports where.
func appendDamaged(pos []uint32, bad, next int, count int64) []uint32 {
	pos = append(pos, uint32(bad))
	for range count - 1 {
		pos = append(pos, uint32(next))
	}
	return pos
}

// resetTail discards whatever lies after the last intact record of the
// active segment: a torn record, or records that were written after it but
// never flushed in order. Left in place, such bytes could pass as valid
// records once new, shorter records are written over the tear. Punching a
// hole is a metadata operation that never writes zeros and keeps the
// file's size, so a crash during it leaves a file recovery accepts; where
// the file system cannot punch holes, the file is truncated and extended
// again (a crash in between leaves a short file, reported as truncated).
func (p *partition[T]) resetTail(cur writePos) error {
	f, err := os.OpenFile(cur.seg.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("mmap: reset tail: %w", err)
	}
	defer f.Close()
	size := int64(cur.seg.size)
	err = punchHole(f, int64(cur.pos), size-int64(cur.pos))
	if errors.Is(err, errors.ErrUnsupported) {
		err = f.Truncate(int64(cur.pos))
		if err == nil {
			err = preallocate(f, int64(cur.pos), size-int64(cur.pos))
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		return fmt.Errorf("mmap: reset tail of %s at byte %d: %w", cur.seg.path, cur.pos, err)
	}
	return nil
}

// recoverCommits loads every group's consumer.offset. A group directory
// is created with its checkpoint in it (see partition.writeCommit), so one
// without a readable checkpoint lost its commit: a *CorruptError naming the
// file, never a silent rewind. recover checks the commits against the log.
func (p *partition[T]) recoverCommits() error {
	root := filepath.Join(p.dir, offsetsDir)
	entries, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("mmap: read groups: %w", err)
	}
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if strings.HasPrefix(e.Name(), groupTmpPrefix) {
			// A first commit or a deletion that a crash interrupted.
			if err := os.RemoveAll(dir); err != nil {
				return fmt.Errorf("mmap: remove leftover: %w", err)
			}
			continue
		}
		group, ok := unescapeGroup(e.Name())
		if !ok || !e.IsDir() {
			p.b.cfg.log.Warn("mmap: leaving an entry this package did not write", zap.String("file", dir))
			continue
		}
		if err := os.Remove(filepath.Join(dir, consumerFile+tmpSuffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("mmap: remove leftover: %w", err)
		}
		path := filepath.Join(dir, consumerFile)
		v, err := readCheckpoint(path, kindConsumer)
		if errors.Is(err, fs.ErrNotExist) {
			return corrupt(path, -1, "missing: the commit of group %q is lost (restore the file, or delete the group to start it again)", group)
		}
		if err != nil {
			return err
		}
		p.commits[group] = v[0]
		p.b.groups.Add(group)
	}
	return nil
}
