package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// ref is one valid entry found by walk; e aliases its segment's buffer,
// which is read once and never written.
type ref struct {
	file  string
	index uint64
	off   int64 // byte position of its frame in file
	h     header
	e     []byte
}

// tear is a torn tail walk found in the last segment: where to cut it.
type tear struct {
	file    string
	index   uint64     // first entry cut
	offset  int64      // byte position the segment is cut at
	size    int64      // bytes cut
	reason  string     // why the bytes there are not an entry
	dropped int        // intact entries of the torn batch after the damage
	cut     []CutEntry // those entries
}

// walked is what walk saw besides the entries.
type walked struct {
	tear     *tear
	next     uint64 // index after the last valid entry
	tailSize int64  // bytes of the last segment, after a cut
	bytes    int64  // bytes of all valid frames
	ended    bool   // the last valid entry ends its write batch
}

// frameAt decodes the tidwall/wal binary frame at p (uvarint length, data)
// and returns its data and the position after it.
func frameAt(buf []byte, p int) ([]byte, int, bool) {
	n, k := binary.Uvarint(buf[p:])
	if k <= 0 || n > uint64(len(buf)-p-k) {
		return nil, 0, false
	}
	start := p + k
	return buf[start : start+int(n)], start + int(n), true
}

// walkMode says how walk reads.
type walkMode struct {
	repair   bool // return a torn tail of the last segment instead of failing
	mapped   bool // map segments read-only: visit must not keep their bytes
	verified bool // Open's walk checked every crc already: skip them
}

// walk reads the generation's segments in order, checks that they hold
// every index from 1 on without gap, and calls visit for each valid entry
// with an index up to limit (0: all). A mapped segment is mapped read-only
// until walk returns (no copy out of the page cache); otherwise each
// segment is read into a buffer of its own. Skipping verified crcs is only
// for a walk of what Open's walk checked, under the same lock: the bytes
// can only have changed through the disk in between.
//
// Damage is an error (a *CorruptError, or a *VersionError for an intact
// entry of another version) unless mode.repair is set and it is a torn tail:
// damage in the last segment followed only by garbage or by entries of the
// write batch the damage is in, which is the last one and so was never
// acknowledged. Such a tail is returned for the caller to cut; the entries
// before it are visited.
func walk(dir string, segs []segmentFile, hint, limit uint64, mode walkMode, visit func(ref) error) (walked, error) {
	var w walked
	if len(segs) == 0 || segs[0].first != 1 {
		first := uint64(0)
		if len(segs) > 0 {
			first = segs[0].first
		}
		return w, corrupt(dir, 0, -1, "the generation's first segment starts at entry %d, not 1: a segment is missing", first)
	}
	if last := segs[len(segs)-1]; hint > last.first {
		return w, corrupt(dir, hint, -1, "segment %020d, recorded as created, is missing (the newest is %s)", hint, last.path)
	}
	var prev header // the last valid entry, across segments (kind 0: none yet)
	next := uint64(1)
	for i, s := range segs {
		if limit != 0 && s.first > limit {
			break
		}
		if s.first != next {
			return w, corrupt(s.path, next, -1, "segment starts at entry %d but the one before it ends before entry %d: entries %d..%d are missing or extra", s.first, next, min(next, s.first), max(next, s.first)-1)
		}
		buf, release, err := readSegment(s.path, mode.mapped)
		if err != nil {
			return w, err
		}
		defer release()
		isLast := i == len(segs)-1
		for p := 0; p < len(buf); {
			if limit != 0 && next > limit {
				return w, nil
			}
			e, end, ok := frameAt(buf, p)
			var h header
			switch {
			case ok && mode.verified:
				h, err = parseHeader(e)
			case ok:
				h, err = decodeHeader(e)
			default:
				err = fmt.Errorf("%w: tidwall/wal frame length is not a uvarint within the file", errDamaged)
			}
			if ve, isVersion := errors.AsType[*VersionError](err); isVersion {
				ve.File, ve.Index = s.path, next
				return w, ve
			}
			if err != nil {
				if !isLast || !mode.repair {
					return w, corrupt(s.path, next, int64(p), "%v", err)
				}
				t, err := classifyDamage(s.path, buf, p, next, prev, err)
				if err != nil {
					return w, err
				}
				w.tear, w.tailSize = t, int64(p)
				w.next = next
				return w, nil
			}
			if err := visit(ref{file: s.path, index: next, off: int64(p), h: h, e: e}); err != nil {
				return w, err
			}
			w.bytes += int64(end - p)
			prev = h
			w.ended = h.flags&flagBatchEnd != 0
			next++
			p = end
		}
		w.tailSize = int64(len(buf))
	}
	w.next = next
	return w, nil
}

// classifyDamage decides whether damage at byte p of the last segment is a
// torn tail. A crash tears only the write batch that was in flight, which
// was never acknowledged: the batch of the entry before the damage when that
// entry does not end its batch, else the next one. Intact entries after the
// damage (a power loss can persist later sectors of a write but not earlier
// ones) must all belong to that batch; an entry of any other batch proves
// that the damaged bytes had been acknowledged, and Open refuses.
func classifyDamage(file string, buf []byte, p int, index uint64, prev header, cause error) (*tear, error) {
	torn := uint64(1) // the batch in flight at the crash
	if prev.kind != 0 {
		torn = prev.batch
		if prev.flags&flagBatchEnd != 0 {
			torn++
		}
	}
	t := &tear{file: file, index: index, offset: int64(p), size: int64(len(buf) - p), reason: cause.Error()}
	for q := p + 1; q < len(buf); q++ {
		e, end, ok := frameAt(buf, q)
		if !ok || len(e) < headerSize || e[4] != formatVersion {
			continue
		}
		h, err := decodeHeader(e)
		if err != nil {
			continue
		}
		if prev.kind == 0 || h.batch != torn {
			return nil, corrupt(file, index, int64(p), "%v; an intact entry of write batch %d follows at byte %d, so the damage is not a torn tail of batch %d", cause, h.batch, q, torn)
		}
		t.dropped++
		t.cut = append(t.cut, cutEntry(q, h, e))
		q = end - 1 // resume after this entry
	}
	return t, nil
}

// cutEntry describes the intact entry e, whose frame starts at byte q, for
// the repair report.
func cutEntry(q int, h header, e []byte) CutEntry {
	c := CutEntry{Byte: int64(q), GC: h.kind == kindGC}
	if h.kind == kindMessage && len(e) >= headerSize+12 {
		c.Partition = int32(binary.LittleEndian.Uint32(e[headerSize:]))
		c.Offset = int64(binary.LittleEndian.Uint64(e[headerSize+4:]))
	}
	return c
}

// readSegment returns the bytes of a segment file, mapped or read, and
// what releases them.
func readSegment(path string, mapped bool) ([]byte, func(), error) {
	if !mapped {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("wal: %w", err)
		}
		return b, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("wal: %w", err)
	}
	defer f.Close() // the mapping outlives the descriptor
	info, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("wal: %w", err)
	}
	if info.Size() == 0 {
		return nil, func() {}, nil
	}
	b, unmap, err := mapReadOnly(f, int(info.Size()))
	if err != nil {
		return nil, nil, fmt.Errorf("wal: map %s: %w", path, err)
	}
	return b, unmap, nil
}
