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
		if err := checkSealed(p.dir, s, p.segs[i+1].first); err != nil {
			return err
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
		if err := checkCommit(p.dir, group, c, head, cur.tail); err != nil {
			return err
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

// checkSealed refuses a segment s of partition directory dir that is
// followed by a segment starting at nextFirst but not sealed there: a
// segment is missing, or the log was not written by this package.
func checkSealed(dir string, s *segment, nextFirst int64) *CorruptError {
	if s.next == unsealed {
		return corrupt(s.path, 0, "segment is not sealed but %s follows it", segmentFileName(nextFirst))
	}
	if s.next != nextFirst {
		return corrupt(filepath.Join(dir, segmentFileName(s.next)), -1,
			"missing segment: %s ends before offset %d but the next segment file starts at %d", filepath.Base(s.path), s.next, nextFirst)
	}
	return nil
}

// checkCommit refuses a commit outside the log [head, tail]: the log lost
// records a group had consumed, or the commit file is not this log's.
func checkCommit(dir, group string, c, head, tail int64) *CorruptError {
	if c < head || c > tail {
		return corrupt(filepath.Join(dir, offsetsDir, escapeGroup(group), consumerFile), -1,
			"group %q committed offset %d, outside the log [%d, %d]", group, c, head, tail)
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

// partitionFiles is what a partition directory holds, read before
// anything is changed: recoverFiles acts on it, Inspect reports it.
type partitionFiles struct {
	head   int64   // first retained offset
	firsts []int64 // first offsets of the retained segments, ascending
	// temps are this package's temporary files (a segment or checkpoint
	// never renamed into place), which Open removes.
	temps []string
	// strays are files this package did not write, which Open leaves.
	strays []string
	// released are segment files below head: a deletion by retention
	// that a crash interrupted (earliest.offset moves first), which Open
	// finishes.
	released []string
	// rebuilt says why earliest.offset cannot be read (missing or
	// damaged), so that head is the first segment file's offset and Open
	// rewrites the checkpoint; nil when it was read.
	rebuilt error
}

// readPartitionFiles reads the names in dir and earliest.offset, changing
// nothing. Damage that leaves the retained range unknown (no segment, a
// head off a segment boundary or before the first segment) is a
// *CorruptError; the files found are returned with it.
func readPartitionFiles(dir string) (partitionFiles, error) {
	var f partitionFiles
	entries, err := os.ReadDir(dir)
	if err != nil {
		return f, fmt.Errorf("mmap: open partition: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		switch first, ok := parseSegmentFileName(name); {
		case ok:
			f.firsts = append(f.firsts, first)
		case isOwnTemp(name):
			f.temps = append(f.temps, filepath.Join(dir, name))
		case name != producerFile && name != earliestFile && name != offsetsDir:
			f.strays = append(f.strays, filepath.Join(dir, name))
		}
	}
	slices.Sort(f.firsts)
	if len(f.firsts) == 0 {
		return f, corrupt(dir, -1, "no segment files")
	}
	earliest := filepath.Join(dir, earliestFile)
	v, err := readCheckpoint(earliest, kindEarliest)
	var ce *CorruptError
	if errors.Is(err, fs.ErrNotExist) || errors.As(err, &ce) {
		// Retention moves earliest.offset before it deletes a segment,
		// so the first segment file left is the first retained offset.
		f.head, f.rebuilt = f.firsts[0], err
		return f, nil
	}
	if err != nil {
		return f, err
	}
	f.head = v[0]
	for len(f.firsts) > 1 && f.firsts[1] <= f.head {
		f.released = append(f.released, filepath.Join(dir, segmentFileName(f.firsts[0])))
		f.firsts = f.firsts[1:]
	}
	if f.firsts[0] < f.head {
		return f, corrupt(earliest, -1, "off a segment boundary: offset %d lies inside segment %s", f.head, segmentFileName(f.firsts[0]))
	}
	if f.firsts[0] > f.head {
		return f, corrupt(filepath.Join(dir, segmentFileName(f.head)), -1,
			"missing segment: %s says the log starts at offset %d but the first segment starts at %d", earliestFile, f.head, f.firsts[0])
	}
	return f, nil
}

// recoverFiles removes leftovers of interrupted writes (only the temporary
// names this package writes), reads earliest.offset (rebuilding it from
// the segment files when it is missing or damaged), finishes a deletion
// by retention that a crash interrupted, and returns the first retained
// offset with the first offsets of the retained segments, ascending.
func (p *partition[T]) recoverFiles() (int64, []int64, error) {
	f, err := readPartitionFiles(p.dir)
	if err != nil {
		return 0, nil, err
	}
	for _, path := range f.temps {
		// A checkpoint or segment that was never renamed into place.
		if err := os.Remove(path); err != nil {
			return 0, nil, fmt.Errorf("mmap: remove leftover: %w", err)
		}
	}
	for _, path := range f.strays {
		p.b.cfg.log.Warn("mmap: leaving a file this package did not write", zap.String("file", path))
	}
	if f.rebuilt != nil {
		earliest := filepath.Join(p.dir, earliestFile)
		p.b.cfg.log.Warn("mmap: rebuilding earliest.offset from the first segment file",
			zap.String("file", earliest), zap.Error(f.rebuilt), zap.Int64("earliest", f.head))
		if err := writeCheckpoint(earliest, kindEarliest, checkpoint{f.head}); err != nil {
			return 0, nil, err
		}
	}
	for _, path := range f.released {
		if err := os.Remove(path); err != nil {
			return 0, nil, fmt.Errorf("mmap: finish retention: %w", err)
		}
	}
	return f.head, f.firsts, nil
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

// producerStart is where the scan for the tail starts, as checkProducer
// decides it from producer.offset.
type producerStart struct {
	cur   writePos // the checkpointed tail, or the last segment's start
	clean bool     // the checkpoint records a clean close
	// rebuild says why the checkpoint cannot be used, so that the scan
	// starts at the last segment's start and Open rewrites it; "" when
	// it is used.
	rebuild string
	// damagedLast says what is wrong with the record just before the
	// checkpointed tail: it was flushed, so it stays in the log and
	// reading it reports it; "" when it is intact.
	damagedLast string
}

// checkProducer validates producer.offset in dir against segs without
// scanning, changing nothing: the segment it names must exist and hold
// the position, and the record just before the position must end there. A
// missing, damaged or inconsistent checkpoint is rebuilt by scanning the
// last segment from its start. A segment shorter than the position is
// truncated: records producer.offset covers were flushed, so their loss is
// a *CorruptError naming the segment. The record before the position was
// flushed too: if it is damaged it stays in the log, and reading it
// reports it.
func checkProducer(dir string, segs []*segment, head int64) (producerStart, error) {
	path := filepath.Join(dir, producerFile)
	rebuild := func(reason string) (producerStart, error) {
		s := segs[len(segs)-1]
		if err := s.ensureMapped(); err != nil {
			return producerStart{}, err
		}
		return producerStart{cur: writePos{seg: s, pos: segmentHeaderSize, last: -1, tail: s.first}, rebuild: reason}, nil
	}
	v, err := readCheckpoint(path, kindProducer)
	var ce *CorruptError
	if errors.Is(err, fs.ErrNotExist) || errors.As(err, &ce) {
		return rebuild(err.Error())
	}
	if err != nil {
		return producerStart{}, err
	}
	tail, segFirst, pos, last, flags := v[0], v[1], v[2], v[3], v[4]
	i := slices.IndexFunc(segs, func(s *segment) bool { return s.first == segFirst })
	if i < 0 {
		if segFirst > segs[len(segs)-1].first {
			return producerStart{}, corrupt(filepath.Join(dir, segmentFileName(segFirst)), -1,
				"missing segment: %s says the log reaches offset %d in it", producerFile, tail)
		}
		return rebuild(fmt.Sprintf("names segment %s, which is not in the log", segmentFileName(segFirst)))
	}
	s := segs[i]
	if err := s.ensureMapped(); err != nil {
		return producerStart{}, err
	}
	if pos > int64(s.size) {
		return producerStart{}, corrupt(s.path, int64(s.size),
			"truncated: the file ends at byte %d but %s says its records reach byte %d (offset %d)", s.size, producerFile, pos, tail)
	}
	st := producerStart{cur: writePos{seg: s, pos: int(pos), last: int(last), tail: tail}, clean: flags == 1}
	switch {
	case tail < head || tail < segFirst || (s.next != unsealed && tail > s.next):
		return rebuild(fmt.Sprintf("tail %d lies outside segment %s (log retained from %d)", tail, filepath.Base(s.path), head))
	case pos < segmentHeaderSize:
		return rebuild(fmt.Sprintf("byte position %d lies in the segment header", pos))
	case tail == segFirst:
		if pos != segmentHeaderSize || last != -1 {
			return rebuild(fmt.Sprintf("off a record boundary: tail %d starts segment %s but position is %d", tail, filepath.Base(s.path), pos))
		}
	case last < segmentHeaderSize || last >= pos:
		return rebuild(fmt.Sprintf("off a record boundary: last record at %d, tail position %d", last, pos))
	default:
		_, next, _, reason := s.decodeWritten(int(last), tail-1)
		if reason != "" {
			st.damagedLast = reason
		} else if int64(next) != pos {
			return rebuild(fmt.Sprintf("off a record boundary: the record at byte %d of %s ends at %d, not at %d", last, filepath.Base(s.path), next, pos))
		}
	}
	return st, nil
}

// checkProducerCheckpoint is checkProducer on the partition: it logs what
// it found and prepares the index of the segment the scan starts in.
func (p *partition[T]) checkProducerCheckpoint(head int64) (_ writePos, clean bool, _ error) {
	st, err := checkProducer(p.dir, p.segs, head)
	if err != nil {
		return writePos{}, false, err
	}
	s := st.cur.seg
	if st.rebuild != "" {
		// The records are checksummed, so the scan from the last
		// segment's start finds the tail the checkpoint would have named.
		p.b.cfg.log.Warn("mmap: rebuilding producer.offset by scanning the last segment",
			zap.String("file", filepath.Join(p.dir, producerFile)), zap.String("reason", st.rebuild), zap.String("segment", s.path))
		s.eagerFirst = s.first
		return st.cur, false, nil
	}
	if st.damagedLast != "" {
		p.b.cfg.log.Warn("mmap: damaged record before the producer checkpoint: kept, reading it reports it",
			zap.String("segment", s.path), zap.Int("byte", st.cur.last), zap.Int64("offset", st.cur.tail-1), zap.String("reason", st.damagedLast))
	}
	// Everything below the checkpointed tail is indexed lazily; what the
	// scan finds from here on is indexed as it goes.
	s.eagerFirst, s.lazyLimit = st.cur.tail, st.cur.pos
	return st.cur, st.clean, nil
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
// records after it stay readable (scanStep decides which).
func (p *partition[T]) scanForward(cur *writePos) error {
	for {
		s := cur.seg
		var pos []uint32
		scanRange(s.data[:s.dataEnd(cur.pos)], cur, segmentLimit(s), func(st step, at int, off int64) {
			switch st.kind {
			case stepRecord:
				pos = append(pos, uint32(at))
			case stepTorn:
				p.b.cfg.log.Warn("mmap: cut a torn record at the end of the log",
					zap.String("segment", s.path), zap.Int("byte", at), zap.Int64("offset", off), zap.String("reason", st.reason))
			case stepDamaged:
				p.b.cfg.log.Warn("mmap: damaged records kept in the log: reading them reports them",
					zap.String("segment", s.path), zap.Int("byte", at), zap.Int64("from", off), zap.Int64("to", st.found-1), zap.String("reason", st.reason))
				pos = appendDamaged(pos, at, st.next, st.found-off)
			}
		})
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

// scanRange advances cur over the records of data (a segment's bytes up
// to where its written data ends) with scanStep, up to offset limit or the
// end of the records, calling visit with each step, the byte position and
// the offset it was taken at. cur ends after the last record, or at the
// end or torn record that stopped the scan.
func scanRange(data []byte, cur *writePos, limit int64, visit func(st step, at int, off int64)) {
	for cur.tail < limit {
		st := scanStep(data, cur.pos, cur.tail, limit)
		visit(st, cur.pos, cur.tail)
		switch st.kind {
		case stepRecord:
			cur.last, cur.pos = cur.pos, st.next
			cur.tail++
		case stepDamaged:
			cur.pos, cur.tail = st.next, st.found
		default:
			return
		}
	}
}

// noLimit is the offset limit of the active segment: its records end
// where the scan finds no more.
const noLimit = math.MaxInt64

// segmentLimit is the offset after the last record s may hold: its next
// once sealed, noLimit while active.
func segmentLimit(s *segment) int64 {
	if s.next != unsealed {
		return s.next
	}
	return noLimit
}

// stepKind is what scanStep found.
type stepKind int

const (
	stepRecord  stepKind = iota // an intact record
	stepDamaged                 // damaged records, kept in the log at their offsets
	stepEnd                     // the end of the records: never-written bytes
	stepTorn                    // a torn record at the end of the records, cut by recovery
)

// step is the outcome of scanStep.
type step struct {
	kind stepKind
	// next is the position after an intact record; after damage, where
	// the scan resumes: the next intact record, or (when none follows
	// within a limit) the damaged position itself.
	next int
	// found is, after damage, the offset at next: the damaged records
	// are the offsets from the one asked up to found.
	found  int64
	reason string // what is wrong, for stepDamaged and stepTorn
}

// scanStep checks the record at byte pos of data (a segment's bytes up to
// where its written data ends), which must hold offset off. limit bounds
// the offsets the range holds: a sealed segment's next, or the producer
// checkpoint's tail for the records below it; noLimit past the checkpoint
// in the active segment. Damage followed by an intact record costs the
// offsets up to that record; with nothing intact after it, a bounded range
// loses every offset up to limit, and an open-ended one ends: at
// never-written bytes (stepEnd) or at a torn record (stepTorn), since a
// crash leaves nothing intact after a torn write.
func scanStep(data []byte, pos int, off, limit int64) step {
	_, next, empty, reason := decodeData(data, len(data), pos, off)
	if reason == "" {
		return step{kind: stepRecord, next: next}
	}
	at, found, ok := findRecord(data, pos, off, limit)
	switch {
	case ok:
		return step{kind: stepDamaged, next: at, found: found, reason: reason}
	case limit != noLimit:
		return step{kind: stepDamaged, next: pos, found: limit, reason: reason}
	case empty:
		return step{kind: stepEnd}
	}
	return step{kind: stepTorn, reason: reason}
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

// groupFiles is what a partition's offsets directory holds, read before
// anything is changed: recoverCommits acts on it, Inspect reports it.
type groupFiles struct {
	commits map[string]int64 // by group
	// temps are what interrupted writes left: .tmp-{group} directories
	// (a first commit or a deletion) and consumer.offset.tmp files, which
	// Open removes.
	temps  []string
	strays []string // entries this package did not write, which Open leaves
	// damaged holds a *CorruptError for each group directory without a
	// readable checkpoint, in name order: its commit is lost.
	damaged []*CorruptError
}

// readGroups reads every group's consumer.offset under the partition
// directory dir, changing nothing. A group directory is created with its
// checkpoint in it (see partition.writeCommit), so one without a readable
// checkpoint lost its commit: damage naming the file, never a silent
// rewind.
func readGroups(dir string) (groupFiles, error) {
	g := groupFiles{commits: map[string]int64{}}
	root := filepath.Join(dir, offsetsDir)
	entries, err := os.ReadDir(root)
	if err != nil {
		return g, fmt.Errorf("mmap: read groups: %w", err)
	}
	for _, e := range entries {
		gdir := filepath.Join(root, e.Name())
		if strings.HasPrefix(e.Name(), groupTmpPrefix) {
			g.temps = append(g.temps, gdir)
			continue
		}
		group, ok := unescapeGroup(e.Name())
		if !ok || !e.IsDir() {
			g.strays = append(g.strays, gdir)
			continue
		}
		if tmp := filepath.Join(gdir, consumerFile+tmpSuffix); pathExists(tmp) {
			g.temps = append(g.temps, tmp)
		}
		path := filepath.Join(gdir, consumerFile)
		v, err := readCheckpoint(path, kindConsumer)
		var ce *CorruptError
		switch {
		case errors.Is(err, fs.ErrNotExist):
			g.damaged = append(g.damaged, corrupt(path, -1, "missing: the commit of group %q is lost (restore the file, or delete the group to start it again)", group))
		case errors.As(err, &ce):
			g.damaged = append(g.damaged, ce)
		case err != nil:
			return g, err
		default:
			g.commits[group] = v[0]
		}
	}
	return g, nil
}

// recoverCommits loads every group's consumer.offset (readGroups) and
// removes what interrupted writes left; a lost commit fails the open.
// recover checks the commits against the log.
func (p *partition[T]) recoverCommits() error {
	g, err := readGroups(p.dir)
	if err != nil {
		return err
	}
	if len(g.damaged) > 0 {
		return g.damaged[0]
	}
	for _, path := range g.temps {
		if err := os.RemoveAll(path); err != nil {
			return fmt.Errorf("mmap: remove leftover: %w", err)
		}
	}
	for _, path := range g.strays {
		p.b.cfg.log.Warn("mmap: leaving an entry this package did not write", zap.String("file", path))
	}
	for group, c := range g.commits {
		p.commits[group] = c
		p.b.groups.Add(group)
	}
	return nil
}
