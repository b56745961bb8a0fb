package mmap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	if err := p.recover(); err != nil {
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
	if err := p.scanForward(&cur); err != nil {
		return err
	}
	p.head.Store(head)
	p.tail.Store(cur.tail)
	p.pub.Store(&cur)
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
	return p.recoverCommits(head, cur.tail)
}

// recoverFiles removes leftovers of interrupted writes, reads
// earliest.offset and returns it with the first offsets of the retained
// segments, ascending.
func (p *partition[T]) recoverFiles() (int64, []int64, error) {
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return 0, nil, fmt.Errorf("mmap: open partition: %w", err)
	}
	var firsts []int64
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, tmpSuffix) {
			// A checkpoint or segment that was never renamed into place.
			if err := os.Remove(filepath.Join(p.dir, name)); err != nil {
				return 0, nil, fmt.Errorf("mmap: remove leftover: %w", err)
			}
			continue
		}
		if first, ok := parseSegmentFileName(name); ok {
			firsts = append(firsts, first)
		}
	}
	slices.Sort(firsts)
	earliest := filepath.Join(p.dir, earliestFile)
	v, err := readCheckpoint(earliest, kindEarliest)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil, corrupt(earliest, -1, "missing")
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
	if len(firsts) == 0 {
		return 0, nil, corrupt(p.dir, -1, "no segment files")
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

// checkProducerCheckpoint validates producer.offset against the segments
// without scanning: the segment it names must exist and, unless the
// position is the segment's start, the record just before the position
// must be intact and hold the offset before the tail.
func (p *partition[T]) checkProducerCheckpoint(head int64) (_ writePos, clean bool, _ error) {
	path := filepath.Join(p.dir, producerFile)
	v, err := readCheckpoint(path, kindProducer)
	if errors.Is(err, fs.ErrNotExist) {
		return writePos{}, false, corrupt(path, -1, "missing")
	}
	if err != nil {
		return writePos{}, false, err
	}
	tail, segFirst, pos, last, flags := v[0], v[1], v[2], v[3], v[4]
	i := slices.IndexFunc(p.segs, func(s *segment) bool { return s.first == segFirst })
	if i < 0 {
		return writePos{}, false, corrupt(path, -1, "ahead of the log: names segment %s, which does not exist", segmentFileName(segFirst))
	}
	s := p.segs[i]
	if err := s.ensureMapped(); err != nil {
		return writePos{}, false, err
	}
	switch {
	case tail < head || tail < segFirst || (s.next != unsealed && tail > s.next):
		return writePos{}, false, corrupt(path, -1, "tail %d lies outside segment %s (log retained from %d)", tail, filepath.Base(s.path), head)
	case pos < segmentHeaderSize || pos > int64(s.size):
		return writePos{}, false, corrupt(path, -1, "byte position %d lies outside segment %s of %d bytes", pos, filepath.Base(s.path), s.size)
	case tail == segFirst:
		if pos != segmentHeaderSize || last != -1 {
			return writePos{}, false, corrupt(path, -1, "off a record boundary: tail %d starts segment %s but position is %d", tail, filepath.Base(s.path), pos)
		}
	default:
		if last < segmentHeaderSize || last >= pos {
			return writePos{}, false, corrupt(path, -1, "off a record boundary: last record at %d, tail position %d", last, pos)
		}
		_, next, _, reason := decodeRecord(s.data, int(last), tail-1)
		if reason != "" {
			return writePos{}, false, corrupt(path, -1, "ahead of the log or off a record boundary: the record before tail %d at byte %d of %s: %s", tail, last, filepath.Base(s.path), reason)
		}
		if int64(next) != pos {
			return writePos{}, false, corrupt(path, -1, "off a record boundary: the record at byte %d of %s ends at %d, not at %d", last, filepath.Base(s.path), next, pos)
		}
	}
	// Everything below the checkpointed tail is indexed lazily; what the
	// scan finds from here on is indexed as it goes.
	s.eagerFirst = tail
	return writePos{seg: s, pos: int(pos), last: int(last), tail: tail}, flags == 1, nil
}

// scanForward advances cur over the intact records after the producer
// checkpoint, following sealed segments into the next one. It stops at the
// first zero, torn or corrupt record of the last segment: the tail.
func (p *partition[T]) scanForward(cur *writePos) error {
	for {
		var pos []uint32
		for {
			_, next, _, reason := decodeRecord(cur.seg.data, cur.pos, cur.tail)
			if reason != "" {
				break
			}
			pos = append(pos, uint32(cur.pos))
			cur.last, cur.pos = cur.pos, next
			cur.tail++
		}
		cur.seg.eager = append(cur.seg.eager, pos...)
		s := cur.seg
		if s.next == unsealed {
			return nil
		}
		if cur.tail != s.next {
			return corrupt(s.path, int64(cur.pos), "segment is sealed at offset %d but its records end at %d", s.next, cur.tail)
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

// resetTail discards whatever lies after the last intact record of the
// active segment: a torn record, or records that were written after it but
// never flushed in order. Left in place, such bytes could pass as valid
// records once new, shorter records are written over the tear. Truncating
// and re-extending the file is a metadata operation: it never writes zeros.
func (p *partition[T]) resetTail(cur writePos) error {
	f, err := os.OpenFile(cur.seg.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("mmap: reset tail: %w", err)
	}
	defer f.Close()
	size := int64(cur.seg.size)
	err = f.Truncate(int64(cur.pos))
	if err == nil {
		err = preallocate(f, int64(cur.pos), size-int64(cur.pos))
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		return fmt.Errorf("mmap: reset tail of %s at byte %d: %w", cur.seg.path, cur.pos, err)
	}
	return nil
}

// recoverCommits loads every group's consumer.offset; a commit outside the
// retained log is corrupt.
func (p *partition[T]) recoverCommits(head, tail int64) error {
	root := filepath.Join(p.dir, offsetsDir)
	entries, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("mmap: read groups: %w", err)
	}
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		group, ok := unescapeGroup(e.Name())
		if !ok || !e.IsDir() {
			return corrupt(dir, -1, "not a group directory this package writes")
		}
		os.Remove(filepath.Join(dir, consumerFile+tmpSuffix))
		path := filepath.Join(dir, consumerFile)
		v, err := readCheckpoint(path, kindConsumer)
		if errors.Is(err, fs.ErrNotExist) {
			// The first commit created the directory, then crashed
			// before its checkpoint: the group has no commit.
			if err := os.Remove(dir); err != nil {
				return fmt.Errorf("mmap: remove empty group directory: %w", err)
			}
			continue
		}
		if err != nil {
			return err
		}
		if c := v[0]; c < head || c > tail {
			return corrupt(path, -1, "group %q committed offset %d, outside the log [%d, %d]", group, c, head, tail)
		}
		p.commits[group] = v[0]
		p.b.groups.Add(group)
	}
	return nil
}
