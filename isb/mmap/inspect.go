package mmap

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Inspecting a topic directory without opening it: what an operator's
// tool (cmd/runnel) shows. Inspect and Verify take no lock and change
// nothing; they decide what is damaged and what Open would repair with the
// functions recovery decides with (readPartitionFiles, readGroups,
// checkProducer, scanStep), so that they say what Open would do.

// ErrNotTopic is returned by Inspect and Verify for a directory that holds
// no topic: neither topic.meta nor a partition directory.
var ErrNotTopic = errors.New("mmap: not a topic directory")

// TopicInfo is what Inspect or Verify found in a topic directory.
type TopicInfo struct {
	Dir string // the topic directory, {dir}/{topic}
	// What topic.meta records; zero values when it is missing or damaged
	// (Damage says which).
	FormatVersion  uint32
	PartitionCount int
	Codec          string // the codec's name, e.g. "json"
	ElementType    string // import path and name of the element type
	// Partitions holds each partition directory found, by id.
	Partitions []PartitionInfo
	// Damage lists what Open refuses or reading reports, in the order
	// found: each a *CorruptError naming the file, the byte position when
	// known and what is wrong. Damaged records name their offsets.
	Damage []*CorruptError
	// Repairs lists what Open would repair, without losing an item any
	// producer was told was stored: leftovers of interrupted writes, a
	// torn record at the end of the log, checkpoints to rebuild.
	Repairs []Repair
	// Verified is set by Verify: every record was read and checked.
	Verified bool
}

// PartitionInfo describes one partition directory.
type PartitionInfo struct {
	ID  int
	Dir string
	// Head is the first retained offset (earliest.offset, or the first
	// segment when that is missing or damaged).
	Head int64
	// Tail is the offset after the last record, as Open would find it
	// (producer.offset lags it after a crash); -1 when damage leaves the
	// shape of the log unknown.
	Tail int64
	// Checkpoint is the tail producer.offset records, -1 when it is
	// missing, damaged or unusable (Open rebuilds it: see Repairs).
	Checkpoint int64
	// Clean reports that producer.offset records a clean close.
	Clean    bool
	Segments []SegmentInfo // ascending
	Groups   []GroupInfo   // by name
}

// SegmentInfo describes one segment file.
type SegmentInfo struct {
	File  string
	First int64 // offset of its first record
	// Next is the offset after its last record: recorded in the header
	// once sealed, the partition's tail for the active segment; -1 when
	// unknown (a damaged header).
	Next   int64
	Sealed bool
	Size   int64 // bytes of the file: fixed when it was created
	Disk   int64 // bytes it occupies on disk (a segment starts as a hole); -1 where the system does not say
	// Filled by Verify, -1 after Inspect: the records that pass their
	// checks, the offsets whose record does not (Damage names them), and
	// the byte after the last intact record.
	Records, Damaged, End int64
}

// GroupInfo is one consumer group's commit in a partition.
type GroupInfo struct {
	Name   string
	Commit int64 // everything below is done
	Lag    int64 // Tail - Commit: what the group has still to consume; -1 when the tail is unknown
}

// Repair is something Open changes when it opens the topic: a leftover of
// an interrupted write it removes, a torn record it cuts, a checkpoint it
// rebuilds from the checksummed records. None loses an item a producer
// was told was stored.
type Repair struct {
	File   string
	Offset int64  // byte position in File, -1 when the whole file is concerned
	What   string // what is found there and what Open does
}

// Inspect describes the topic directory dir ({dir}/{topic} of New's
// directory) as Open would find it, without opening it: it takes no lock
// and writes nothing. It reads what Open reads (topic.meta, the
// checkpoints, one header per segment, and the records written after the
// producer checkpoint), so its cost does not grow with the log; damaged
// records below the checkpoint are found by Verify only. A directory that
// is not a topic is ErrNotTopic; an I/O failure (a missing directory, a
// file it may not read) is returned as an error. Damage is never an
// error: it is in TopicInfo.Damage.
//
// A topic open in a running process may change while it is read: a torn
// record at its tail then is a write in progress.
func Inspect(dir string) (*TopicInfo, error) { return inspect(dir, false) }

// Verify is Inspect reading every record of every retained segment and
// checking it (length, crc32c, offset, end marker), as a reader would: each
// damaged record is in Damage with its segment file, byte position and
// offsets, and the intact records after it are counted. The payloads are
// not decoded: Verify knows no element type.
func Verify(dir string) (*TopicInfo, error) { return inspect(dir, true) }

func inspect(dir string, full bool) (*TopicInfo, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("mmap: inspect: %w", err)
	}
	t := &TopicInfo{Dir: dir, Verified: full}
	var ids []int
	hasMeta := false
	for _, e := range entries {
		name := e.Name()
		if id, ok := parsePartitionDir(name); ok && e.IsDir() {
			ids = append(ids, id)
		}
		if id, ok := parsePartitionDir(strings.TrimSuffix(name, tmpSuffix)); ok && name == partitionDirName(id)+tmpSuffix {
			t.repair(filepath.Join(dir, name), -1, "a partition whose creation was interrupted: Open removes it")
		}
		hasMeta = hasMeta || name == metaFile
	}
	if !hasMeta && len(ids) == 0 {
		return nil, fmt.Errorf("%w: %s holds neither %s nor a partition directory", ErrNotTopic, dir, metaFile)
	}
	slices.Sort(ids)
	metaPath := filepath.Join(dir, metaFile)
	if !hasMeta {
		t.Damage = append(t.Damage, corrupt(metaPath, -1, metaMissing))
	} else if data, err := os.ReadFile(metaPath); err != nil {
		return nil, fmt.Errorf("mmap: inspect: %w", err)
	} else if m, reason := decodeTopicMeta(data); reason != "" {
		t.Damage = append(t.Damage, corrupt(metaPath, -1, "%s", reason))
	} else {
		t.FormatVersion, t.PartitionCount, t.Codec, t.ElementType = m.version, m.partitions, m.codec, m.elem
		if m.version != formatVersion {
			t.Damage = append(t.Damage, corrupt(metaPath, -1, "format version %d, this build reads version %d", m.version, formatVersion))
		}
		for id := range m.partitions {
			if !slices.Contains(ids, id) {
				t.repair(filepath.Join(dir, partitionDirName(id)), -1, "missing: Open creates the partition empty")
			}
		}
	}
	for _, id := range ids {
		pdir := filepath.Join(dir, partitionDirName(id))
		if t.PartitionCount > 0 && id >= t.PartitionCount {
			t.Damage = append(t.Damage, corrupt(pdir, -1, "%s records %d partitions, but this partition exists", metaFile, t.PartitionCount))
		}
		if err := t.inspectPartition(pdir, id, full); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *TopicInfo) repair(file string, off int64, format string, args ...any) {
	t.Repairs = append(t.Repairs, Repair{File: file, Offset: off, What: fmt.Sprintf(format, args...)})
}

// damaged records damage to the offsets [off, found) of segment s at byte
// at, named as Read names it.
func (t *TopicInfo) damaged(s *segment, at int, off, found int64, reason string) {
	if found-off == 1 {
		t.Damage = append(t.Damage, corrupt(s.path, int64(at), "offset %d: %s", off, reason))
		return
	}
	t.Damage = append(t.Damage, corrupt(s.path, int64(at), "offsets %d..%d (%d records): %s", off, found-1, found-off, reason))
}

// inspectPartition appends what partition directory dir holds to t.
func (t *TopicInfo) inspectPartition(dir string, id int, full bool) error {
	pi := PartitionInfo{ID: id, Dir: dir, Tail: -1, Checkpoint: -1}
	defer func() { t.Partitions = append(t.Partitions, pi) }()
	files, err := readPartitionFiles(dir)
	var ce *CorruptError
	if err != nil && !errors.As(err, &ce) {
		return err
	}
	known := err == nil // the shape of the log is known
	if ce != nil {
		t.Damage = append(t.Damage, ce)
	}
	pi.Head = files.head
	for _, f := range files.temps {
		t.repair(f, -1, "a temporary file of an interrupted write: Open removes it")
	}
	for _, f := range files.released {
		t.repair(f, -1, "below %s: a deletion by retention that a crash interrupted, which Open finishes", earliestFile)
	}
	if files.rebuilt != nil {
		t.repair(filepath.Join(dir, earliestFile), -1, "%v: Open rebuilds it from the first segment file (offset %d)", files.rebuilt, files.head)
	}

	// One header per segment; a damaged one leaves the shape unknown.
	segs := make([]*segment, 0, len(files.firsts))
	for _, first := range files.firsts {
		path := filepath.Join(dir, segmentFileName(first))
		fi, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("mmap: inspect: %w", err)
		}
		si := SegmentInfo{File: path, First: first, Next: -1, Size: fi.Size(), Disk: allocated(fi), Records: -1, Damaged: -1, End: -1}
		s, err := openSegment(path, first)
		if errors.As(err, &ce) {
			t.Damage = append(t.Damage, ce)
			known = false
			s = nil
		} else if err != nil {
			return err
		} else {
			s.readOnly = true
			si.Sealed = s.next != unsealed
			if si.Sealed {
				si.Next = s.next
			}
			if full {
				si.Records, si.Damaged, si.End = 0, 0, segmentHeaderSize
			}
		}
		segs = append(segs, s)
		pi.Segments = append(pi.Segments, si)
	}
	for i := 0; known && i+1 < len(segs); i++ {
		if err := checkSealed(dir, segs[i], segs[i+1].first); err != nil {
			t.Damage = append(t.Damage, err)
			known = false
		}
	}

	groups, err := readGroups(dir)
	if err != nil {
		return err
	}
	t.Damage = append(t.Damage, groups.damaged...)
	for _, f := range groups.temps {
		t.repair(f, -1, "left by a commit or a group deletion that a crash interrupted: Open removes it")
	}
	for _, g := range slices.Sorted(maps.Keys(groups.commits)) {
		pi.Groups = append(pi.Groups, GroupInfo{Name: g, Commit: groups.commits[g], Lag: -1})
	}
	if !known {
		return nil
	}

	ps, err := checkProducer(dir, segs, pi.Head)
	if errors.As(err, &ce) {
		t.Damage = append(t.Damage, ce)
		return nil
	}
	if err != nil {
		return err
	}
	if ps.rebuild != "" {
		t.repair(filepath.Join(dir, producerFile), -1, "%s: Open rebuilds it by scanning %s from its start", ps.rebuild, filepath.Base(ps.cur.seg.path))
	} else {
		pi.Checkpoint, pi.Clean = ps.cur.tail, ps.clean
	}
	if ps.damagedLast != "" && !full { // Verify finds it in its scan
		t.damaged(ps.cur.seg, ps.cur.last, ps.cur.tail-1, ps.cur.tail, ps.damagedLast)
	}
	count := func(i int, st step, off int64) {
		si := &pi.Segments[i]
		if !full {
			return
		}
		switch st.kind {
		case stepRecord:
			si.Records++
			si.End = int64(st.next)
		case stepDamaged:
			si.Damaged += st.found - off
		}
	}

	// Below the producer checkpoint, records were flushed before it was
	// written: damage there is kept, however it ends (Verify only).
	ck := slices.Index(segs, ps.cur.seg)
	for i, s := range segs[:ck+1] {
		if !full || (i == ck && ps.rebuild != "") {
			break
		}
		if err := s.ensureMapped(); err != nil {
			return err
		}
		data, limit := s.data, s.next
		if i == ck {
			data, limit = s.data[:min(ps.cur.pos, len(s.data))], ps.cur.tail
		}
		scanRange(data, &writePos{seg: s, pos: segmentHeaderSize, last: -1, tail: s.first}, limit, func(st step, at int, off int64) {
			count(i, st, off)
			if st.kind == stepDamaged {
				t.damaged(s, at, off, st.found, st.reason)
			}
		})
	}

	// Past it, as recovery's scanForward: into sealed segments, up to a
	// torn record or never-written bytes in the active one.
	cur := ps.cur
	var torn *step
	tornAt := writePos{}
	for i := ck; ; i++ {
		s := segs[i]
		scanRange(s.data[:s.dataEnd(cur.pos)], &cur, segmentLimit(s), func(st step, at int, off int64) {
			count(i, st, off)
			switch st.kind {
			case stepDamaged:
				t.damaged(s, at, off, st.found, st.reason)
			case stepTorn:
				torn, tornAt = &st, writePos{seg: s, pos: at, tail: off}
			}
		})
		if s.next == unsealed {
			break
		}
		if i == len(segs)-1 {
			t.repair(filepath.Join(dir, segmentFileName(s.next)), -1,
				"missing: %s was sealed before offset %d, and a crash came before the next segment was published: Open creates it", filepath.Base(s.path), s.next)
			cur = writePos{tail: s.next}
			break
		}
		n := segs[i+1]
		if err := n.ensureMapped(); err != nil {
			return err
		}
		cur = writePos{seg: n, pos: segmentHeaderSize, last: -1, tail: n.first}
	}
	floor := cur.tail
	for _, c := range groups.commits {
		floor = max(floor, c)
	}
	switch {
	case torn != nil && floor > cur.tail:
		// As keepCommitted: a commit flushed what it covers, so the
		// records were written whole and this is no torn write.
		t.damaged(tornAt.seg, tornAt.pos, tornAt.tail, floor, torn.reason+"; a group committed past it, so it was written whole: kept as damaged")
		if full {
			pi.Segments[slices.Index(segs, tornAt.seg)].Damaged += floor - tornAt.tail
		}
		cur.tail = floor
	case torn != nil:
		t.repair(tornAt.seg.path, int64(tornAt.pos), "offset %d: a torn record at the end of the log (%s), never acknowledged: Open cuts it", tornAt.tail, torn.reason)
	}
	pi.Tail = cur.tail
	if last := &pi.Segments[len(pi.Segments)-1]; !last.Sealed {
		last.Next = cur.tail
	}
	for i := range pi.Groups {
		g := &pi.Groups[i]
		if err := checkCommit(dir, g.Name, g.Commit, pi.Head, pi.Tail); err != nil {
			t.Damage = append(t.Damage, err)
		}
		g.Lag = pi.Tail - g.Commit
	}
	return nil
}
