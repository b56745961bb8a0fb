package mmap

import (
	"encoding/binary"
	"fmt"

	"github.com/runnel-dev/runnel/internal/crc32c"
)

// The on-disk formats of records and segment headers; the package doc
// draws them. All integers are little-endian.

const (
	recordHeaderSize = 16 // length, crc, offset
	recordTrailer    = 4  // end marker
	recordOverhead   = recordHeaderSize + recordTrailer
	// endMarker closes every record. A zero-filled (never written) region
	// never carries it, so the end of the log is recognised even for an
	// empty payload.
	endMarker uint32 = 0x0A4C4E52 // "RNL\n"

	segmentMagic      uint32 = 0x534C4E52 // "RNLS"
	segmentVersion    uint32 = 1
	segmentHeaderSize        = 32
	unsealed          int64  = -1
)

// recordSize is the bytes a record with an n-byte payload occupies.
func recordSize(n int) int { return recordOverhead + n }

// frameRecord completes a record whose payload is already at
// rec[recordHeaderSize:len(rec)-recordTrailer]: it fills the header and the
// end marker. The caller appended recordHeaderSize placeholder bytes, the
// payload, then recordTrailer placeholder bytes.
func frameRecord(rec []byte, offset int64) {
	n := len(rec) - recordOverhead
	binary.LittleEndian.PutUint32(rec[0:], uint32(n))
	binary.LittleEndian.PutUint64(rec[8:], uint64(offset))
	binary.LittleEndian.PutUint32(rec[len(rec)-recordTrailer:], endMarker)
	binary.LittleEndian.PutUint32(rec[4:], recordCRC(rec[:len(rec)-recordTrailer]))
}

// recordCRC covers the length, the offset and the payload: everything but
// the crc field itself and the end marker.
func recordCRC(head []byte) uint32 {
	crc := crc32c.Checksum(head[0:4])
	return crc32c.Update(crc, head[8:])
}

// decodeRecord checks the record at pos in seg, which must carry offset
// want, and returns its payload and the position after it. A failure
// returns a reason and, when the bytes there were never written at all
// (a zero header: the normal end of the log), empty=true.
func decodeRecord(seg []byte, pos int, want int64) (payload []byte, next int, empty bool, reason string) {
	if pos < 0 || pos > len(seg) || len(seg)-pos < recordOverhead {
		return nil, 0, true, "no room for a record header"
	}
	h := seg[pos : pos+recordHeaderSize]
	n := int(binary.LittleEndian.Uint32(h[0:]))
	crc := binary.LittleEndian.Uint32(h[4:])
	off := int64(binary.LittleEndian.Uint64(h[8:]))
	if n == 0 && crc == 0 && off == 0 && binary.LittleEndian.Uint32(seg[pos+recordHeaderSize:]) == 0 {
		return nil, 0, true, "no record (zero bytes)"
	}
	if n > len(seg)-pos-recordOverhead {
		return nil, 0, false, fmt.Sprintf("record length %d runs past the end of the segment", n)
	}
	end := pos + recordHeaderSize + n
	if m := binary.LittleEndian.Uint32(seg[end:]); m != endMarker {
		return nil, 0, false, fmt.Sprintf("end marker %#x, want %#x (torn or overwritten record)", m, endMarker)
	}
	if got := recordCRC(seg[pos:end]); got != crc {
		return nil, 0, false, fmt.Sprintf("crc32c %#x, stored %#x", got, crc)
	}
	if off != want {
		return nil, 0, false, fmt.Sprintf("record holds offset %d, want %d", off, want)
	}
	return seg[pos+recordHeaderSize : end], end + recordTrailer, false, ""
}

// segmentHeader is the first segmentHeaderSize bytes of a segment file.
type segmentHeader struct {
	first int64 // offset of the segment's first record (also in its name)
	next  int64 // offset after its last record once sealed, else unsealed
	// size is the file's size in bytes, fixed when it is created: a crash
	// never changes it, so a file of another size was truncated (or
	// extended) by something else.
	size uint32
}

func (h segmentHeader) encode(b []byte) {
	binary.LittleEndian.PutUint32(b[0:], segmentMagic)
	binary.LittleEndian.PutUint32(b[4:], segmentVersion)
	binary.LittleEndian.PutUint64(b[8:], uint64(h.first))
	binary.LittleEndian.PutUint64(b[16:], uint64(h.next))
	binary.LittleEndian.PutUint32(b[24:], h.size)
	binary.LittleEndian.PutUint32(b[28:], crc32c.Checksum(b[0:28]))
}

func decodeSegmentHeader(b []byte) (segmentHeader, string) {
	if len(b) < segmentHeaderSize {
		return segmentHeader{}, fmt.Sprintf("file of %d bytes has no segment header", len(b))
	}
	if m := binary.LittleEndian.Uint32(b[0:]); m != segmentMagic {
		return segmentHeader{}, fmt.Sprintf("magic %#x, want %#x", m, segmentMagic)
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != segmentVersion {
		return segmentHeader{}, fmt.Sprintf("unknown segment version %d", v)
	}
	if got, want := crc32c.Checksum(b[0:28]), binary.LittleEndian.Uint32(b[28:]); got != want {
		return segmentHeader{}, fmt.Sprintf("header crc32c %#x, stored %#x", got, want)
	}
	h := segmentHeader{first: int64(binary.LittleEndian.Uint64(b[8:])), next: int64(binary.LittleEndian.Uint64(b[16:])), size: binary.LittleEndian.Uint32(b[24:])}
	if h.first < 0 || (h.next != unsealed && h.next < h.first) {
		return segmentHeader{}, fmt.Sprintf("header offsets first=%d next=%d are inconsistent", h.first, h.next)
	}
	return h, ""
}

// findRecord looks for the first intact record after the damaged one at
// pos, which should hold offset want, so that one damaged record does not
// cost the records after it. It tries where the damaged record's length
// field says it ends (the record at want+1), then every byte position from
// pos to the end of seg for a record holding an offset in (want, limit).
// It returns that record's position and offset. A crash never leaves an
// intact record after a torn one, so ok means the damage is not a torn
// tail.
func findRecord(seg []byte, pos int, want, limit int64) (at int, off int64, ok bool) {
	if pos < 0 || len(seg)-pos < recordOverhead {
		return 0, 0, false
	}
	if n := int(binary.LittleEndian.Uint32(seg[pos:])); n <= len(seg)-pos-recordOverhead && want+1 < limit {
		q := pos + recordSize(n)
		if _, _, _, reason := decodeRecord(seg, q, want+1); reason == "" {
			return q, want + 1, true
		}
	}
	// From pos itself: after a recovery kept damaged records at the tail,
	// appends overwrite them, so pos may hold a later record.
	for q := pos; q+recordOverhead <= len(seg); q++ {
		// The offset field is the cheapest filter: only a plausible one
		// costs a checksum.
		off := int64(binary.LittleEndian.Uint64(seg[q+8:]))
		if off <= want || off >= limit {
			continue
		}
		if _, _, _, reason := decodeRecord(seg, q, off); reason == "" {
			return q, off, true
		}
	}
	return 0, 0, false
}

// allZero reports whether b holds only zero bytes: never written.
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
