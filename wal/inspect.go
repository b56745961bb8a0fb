package wal

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"
)

// Inspecting a log directory without opening it: what an operator's tool
// (cmd/runnel) shows. Inspect takes no lock and changes nothing; whether
// damage is a torn tail that Open cuts or damage that Open refuses is
// decided by Open's own walk (walk in repair mode, checkClosed), and every
// entry is then read again by a scan that goes on past damage, so that the
// intact entries after a damaged one are counted.

// ErrNotLog is returned by Inspect for a directory that holds no log:
// neither a metadata record nor a generation directory.
var ErrNotLog = errors.New("wal: not a log directory")

// Info is what Inspect found in a log directory.
type Info struct {
	Dir        string
	Generation uint64            // n of the live generation gen-{n}; 0 when there is none
	Metadata   map[string]string // the metadata record; nil when missing or damaged
	Segments   []SegmentInfo     // of the live generation, in index order
	// Counts of the intact entries, of every kind and by kind (Open's
	// compaction makes one checkpoint entry per generation).
	Entries, Messages, GCEvents int
	// OpenMessages counts the messages with a window no GC event closed:
	// what Replay yields once Open has compacted the log.
	OpenMessages int
	// OpenWindows are those messages' windows that no GC event closed,
	// ordered by start, end and session; a session window's bounds span
	// every entry assigned to it.
	OpenWindows []Window
	// LastOffsets and Watermark are what Recovered would report: the
	// highest offset appended per partition, the highest GC watermark.
	LastOffsets map[int32]int64
	Watermark   time.Time
	// ClosedAt is the last index a clean Close recorded (CLOSED), 0 when
	// none; Clean reports that nothing was appended since.
	ClosedAt uint64
	Clean    bool
	Bytes    int64 // of every file under Dir
	// Damage lists what Open refuses, in the order found: each a
	// *CorruptError naming the file, the entry index when known and the
	// byte position, or a *VersionError for an intact entry of another
	// format version.
	Damage []error
	// Repair is the torn tail Open would cut (the write batch a crash
	// interrupted, never acknowledged); nil when there is none.
	Repair *Repair
	// Leftovers are generation directories a compaction left, which Open
	// removes once the live one passed its checks.
	Leftovers []string
}

// SegmentInfo describes one segment file of the live generation.
type SegmentInfo struct {
	File    string
	First   uint64 // index of its first entry, from its name
	Entries int    // intact entries
	Bytes   int64  // size of the file
}

// Inspect reads the log in dir without opening it: it takes no lock and
// repairs, compacts and writes nothing. It checks every entry's crc and
// version as Open does, and decodes every entry to count the open windows.
// A directory without a log is ErrNotLog; an I/O failure is returned as an
// error. Damage is never an error: it is in Info.Damage and Info.Repair.
//
// A log open in a running process may change while it is read: a torn
// tail then is a write in progress.
func Inspect(dir string) (*Info, error) {
	gen, leftovers, err := liveGeneration(dir)
	if err != nil {
		return nil, err
	}
	in := &Info{Dir: dir, Generation: gen, Leftovers: leftovers}
	meta, hasMeta, err := readMeta(dir)
	var ce *CorruptError
	switch {
	case errors.As(err, &ce):
		in.Damage = append(in.Damage, ce)
		hasMeta = true
	case err != nil:
		return nil, err
	}
	in.Metadata = meta
	if gen == 0 {
		if !hasMeta {
			return nil, fmt.Errorf("%w: %s holds neither %s nor a generation directory (%s{n})", ErrNotLog, dir, metaFile, genPrefix)
		}
		in.Damage = append(in.Damage, generationMissing(dir))
		return in, nil
	}
	if in.Bytes, err = dirSize(dir); err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	gdir := filepath.Join(dir, genName(gen))
	in.ClosedAt, err = readClosed(gdir)
	markerKnown := err == nil
	if errors.As(err, &ce) {
		in.Damage = append(in.Damage, ce)
	} else if err != nil {
		return nil, err
	}
	segs, hint, err := listSegments(gdir)
	if errors.As(err, &ce) {
		in.Damage = append(in.Damage, ce)
		return in, nil
	}
	if err != nil {
		return nil, err
	}

	// What Open decides: the first damage it refuses, or a torn tail.
	found, err := walk(gdir, segs, hint, 0, walkMode{repair: true, mapped: true}, func(ref) error { return nil })
	var first error
	switch {
	case err != nil:
		if !errors.As(err, &ce) && !errors.Is(err, ErrVersion) {
			return nil, err
		}
		first = err
	case found.next == 1:
		first = corrupt(gdir, 1, -1, "the generation has no checkpoint entry")
	case markerKnown:
		first = checkClosed(segs, in.ClosedAt, found)
	}
	torn := found.tear
	if first != nil || !markerKnown {
		torn = nil // Open refuses: the damage is reported, not cut
	}
	if torn != nil {
		in.Repair = torn.report()
	}
	in.Clean = markerKnown && first == nil && in.ClosedAt != 0 && torn == nil && found.next-1 == in.ClosedAt

	// Every entry, going on past damage.
	s := logSummary{closed: map[windowKey]bool{}, open: map[windowKey]Window{}, offsets: map[int32]int64{}}
	var d decoder
	var damage []error
	for _, seg := range segs {
		si, err := scanSegment(seg, torn, func(r ref) {
			rec, err := d.decode(r.e)
			if err == nil && (r.index == 1) != (rec.kind == kindCheckpoint) && r.index != 0 {
				err = fmt.Errorf("entry of kind %d: a generation starts with its checkpoint entry and has only that one", rec.kind)
			}
			if err != nil {
				damage = append(damage, corrupt(r.file, r.index, r.off, "%v", err))
				return
			}
			s.add(rec)
		}, func(err error) { damage = append(damage, err) })
		if err != nil {
			return nil, err
		}
		in.Segments = append(in.Segments, si)
		in.Entries += si.Entries
	}
	// Open's refusal says more than the scan about the same bytes (why a
	// damaged tail is no torn tail): it replaces the scan's, or leads.
	if i := slices.IndexFunc(damage, func(e error) bool { return sameDamage(e, first) }); i >= 0 {
		damage[i] = first
	} else if first != nil {
		in.Damage = append(in.Damage, first)
	}
	in.Damage = append(in.Damage, damage...)
	s.fill(in)
	return in, nil
}

// sameDamage reports whether a and b name the same file and byte.
func sameDamage(a, b error) bool {
	if a == nil || b == nil {
		return false
	}
	var ca, cb *CorruptError
	var va, vb *VersionError
	switch {
	case errors.As(a, &ca) && errors.As(b, &cb):
		return ca.File == cb.File && ca.Offset == cb.Offset
	case errors.As(a, &va) && errors.As(b, &vb):
		return va.File == vb.File && va.Index == vb.Index
	}
	return false
}

// scanSegment reads every frame of seg, calling visit for each entry whose
// crc and version hold and bad for each damaged stretch. Unlike walk it
// goes on after damage: at the end of a damaged entry whose frame length
// leads to an intact entry (or to the end of the file), else at the next
// intact entry found byte by byte, after which indexes are not known (a
// ref's index is 0). A torn tail in seg ends the scan where Open cuts.
func scanSegment(seg segmentFile, torn *tear, visit func(ref), bad func(error)) (SegmentInfo, error) {
	buf, release, err := readSegment(seg.path, true)
	if err != nil {
		return SegmentInfo{}, err
	}
	defer release()
	si := SegmentInfo{File: seg.path, First: seg.first, Bytes: int64(len(buf))}
	if torn != nil && torn.file == seg.path {
		buf = buf[:torn.offset]
	}
	intact := func(p int) bool {
		e, _, ok := frameAt(buf, p)
		if !ok {
			return false
		}
		_, err := decodeHeader(e)
		return err == nil || errors.Is(err, ErrVersion)
	}
	index := seg.first
	for p := 0; p < len(buf); {
		e, end, ok := frameAt(buf, p)
		var h header
		err := fmt.Errorf("%w: tidwall/wal frame length is not a uvarint within the file", errDamaged)
		if ok {
			h, err = decodeHeader(e)
		}
		if ve, isVersion := errors.AsType[*VersionError](err); isVersion {
			ve.File, ve.Index = seg.path, index
			bad(ve)
		} else if err != nil {
			at := int64(p)
			switch {
			case ok && (end == len(buf) || intact(end)):
				bad(corrupt(seg.path, index, at, "%v", err))
			default:
				q := p + 1
				for q < len(buf) && !intact(q) {
					q++
				}
				if q == len(buf) {
					bad(corrupt(seg.path, index, at, "%v; no intact entry follows in the segment", err))
				} else {
					bad(corrupt(seg.path, index, at, "%v; the next intact entry is at byte %d, its index unknown", err, q))
				}
				end, index = q, 0
				p = end
				continue
			}
		} else {
			visit(ref{file: seg.path, index: index, off: int64(p), h: h, e: e})
			si.Entries++
		}
		if index != 0 {
			index++
		}
		p = end
	}
	return si, nil
}

// logSummary sums up the entries of a log as Open's compaction would see
// them.
type logSummary struct {
	messages, gcs int
	watermark     time.Time
	offsets       map[int32]int64
	closed        map[windowKey]bool
	msgs          [][]Window // each message's windows
	open          map[windowKey]Window
}

func (s *logSummary) add(r record) {
	switch r.kind {
	case kindCheckpoint:
		for p, o := range r.cp.offsets {
			s.note(p, o)
		}
		s.watermark = later(s.watermark, r.cp.watermark)
	case kindGC:
		s.gcs++
		s.watermark = later(s.watermark, r.gc.watermark)
		for _, w := range r.gc.windows {
			s.closed[w.key()] = true
		}
	case kindMessage:
		s.messages++
		s.note(r.msg.Partition, r.msg.Offset)
		s.msgs = append(s.msgs, r.msg.Windows)
	}
}

func (s *logSummary) note(p int32, o int64) {
	if old, ok := s.offsets[p]; !ok || o > old {
		s.offsets[p] = o
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// fill sets the summary's counts and open windows in in.
func (s *logSummary) fill(in *Info) {
	in.Messages, in.GCEvents, in.Watermark, in.LastOffsets = s.messages, s.gcs, s.watermark, s.offsets
	for _, ws := range s.msgs {
		open := false
		for _, w := range ws {
			k := w.key()
			if s.closed[k] {
				continue
			}
			open = true
			if o, ok := s.open[k]; ok && w.Session != 0 {
				if w.Start.Before(o.Start) {
					o.Start = w.Start
				}
				o.End = later(o.End, w.End)
				w = o
			}
			s.open[k] = w
		}
		if open {
			in.OpenMessages++
		}
	}
	in.OpenWindows = slices.SortedFunc(maps.Values(s.open), func(a, b Window) int {
		return cmp.Or(a.Start.Compare(b.Start), a.End.Compare(b.End), cmp.Compare(a.Session, b.Session))
	})
}
