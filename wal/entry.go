package wal

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/runnel-dev/runnel/internal/crc32c"
)

// Entry is one message the reduce read, as the log stores it.
//
// In an Entry yielded by Replay, Value aliases the log's mapped segment and
// is valid only until the iteration advances: decode it (or copy it) in the
// loop body. Keys and Windows are the caller's to keep.
type Entry struct {
	Partition int32     // ISB partition the message was read from
	Offset    int64     // its offset in that partition
	EventTime time.Time // its event time; the zero Time is stored as such
	ID        string    // the message's ID, so that a replayed message keeps it
	Keys      []string  // its keys
	Windows   []Window  // the windows it was assigned to; at least one
	Value     []byte    // the value, already encoded by the caller's codec
}

// Window is a window an entry is assigned to, and what a GC event closes.
//
// An aligned window (fixed or sliding) has Session 0 and is identified by
// its bounds [Start, End). A session window has a non-zero Session id that
// identifies it alone: its bounds may grow as the session does, and are
// stored as they were when the entry was assigned, for the replaying reduce
// to rebuild the session from.
type Window struct {
	Start, End time.Time
	Session    uint64
}

// windowKey identifies a window for GC: bounds for aligned windows, the id
// alone for session windows.
type windowKey struct {
	start, end int64
	session    uint64
}

func (w Window) key() windowKey {
	if w.Session != 0 {
		return windowKey{session: w.Session}
	}
	return windowKey{start: encodeTime(w.Start), end: encodeTime(w.End)}
}

// The entry format (drawn in doc.go). All integers little-endian. Version
// 2 added the message ID; version 1 entries are refused (*VersionError): no
// release wrote them.
const (
	formatVersion = 2
	headerSize    = 15 // crc u32, version u8, kind u8, flags u8, batch u64
	windowSize    = 24 // start i64, end i64, session u64

	kindMessage    = 1
	kindGC         = 2
	kindCheckpoint = 3

	flagBatchEnd = 1 // the last entry of its write batch

	// zeroTime encodes the zero time.Time, whose UnixNano is undefined.
	zeroTime = math.MinInt64
)

// header is the fixed part of every entry.
type header struct {
	kind  byte
	flags byte
	batch uint64
}

func encodeTime(t time.Time) int64 {
	if t.IsZero() {
		return zeroTime
	}
	return t.UnixNano()
}

func decodeTime(ns int64) time.Time {
	if ns == zeroTime {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// checkTime refuses times UnixNano cannot represent (before 1678 or after
// 2261), which would otherwise be stored as garbage.
func checkTime(what string, t time.Time) error {
	if t.IsZero() {
		return nil
	}
	if y := t.Year(); y < 1678 || y > 2261 {
		return fmt.Errorf("%w: %s %v is outside the years 1678-2261 a log can store", ErrInvalid, what, t)
	}
	return nil
}

// appendHeader appends a header whose crc, batch and flags are filled in by
// seal once the entry's batch is known.
func appendHeader(dst []byte, kind byte) []byte {
	dst = append(dst, 0, 0, 0, 0, formatVersion, kind, 0)
	return binary.LittleEndian.AppendUint64(dst, 0)
}

// seal sets the batch and flags of the encoded entry e and its crc.
func seal(e []byte, batch uint64, flags byte) {
	e[6] = flags
	binary.LittleEndian.PutUint64(e[7:], batch)
	binary.LittleEndian.PutUint32(e, crc32c.Checksum(e[4:]))
}

func appendWindows(dst []byte, ws []Window) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ws)))
	for _, w := range ws {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(encodeTime(w.Start)))
		dst = binary.LittleEndian.AppendUint64(dst, uint64(encodeTime(w.End)))
		dst = binary.LittleEndian.AppendUint64(dst, w.Session)
	}
	return dst
}

// validate checks what an entry must hold before it is encoded.
func (e *Entry) validate() error {
	if len(e.Windows) == 0 {
		return fmt.Errorf("%w: entry of partition %d offset %d has no window", ErrInvalid, e.Partition, e.Offset)
	}
	if err := checkTime("event time", e.EventTime); err != nil {
		return err
	}
	return checkWindows(e.Windows)
}

func checkWindows(ws []Window) error {
	for _, w := range ws {
		if err := checkTime("window start", w.Start); err != nil {
			return err
		}
		if err := checkTime("window end", w.End); err != nil {
			return err
		}
	}
	return nil
}

// appendMessage appends e encoded as an unsealed message entry.
func appendMessage(dst []byte, e *Entry) []byte {
	dst = appendHeader(dst, kindMessage)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(e.Partition))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(e.Offset))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(encodeTime(e.EventTime)))
	dst = binary.AppendUvarint(dst, uint64(len(e.ID)))
	dst = append(dst, e.ID...)
	dst = binary.AppendUvarint(dst, uint64(len(e.Keys)))
	for _, k := range e.Keys {
		dst = binary.AppendUvarint(dst, uint64(len(k)))
		dst = append(dst, k...)
	}
	dst = appendWindows(dst, e.Windows)
	return append(dst, e.Value...)
}

// gcEvent closes windows: their entries are dropped by the next compaction.
type gcEvent struct {
	watermark time.Time
	windows   []Window
}

func appendGC(dst []byte, g *gcEvent) []byte {
	dst = appendHeader(dst, kindGC)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(encodeTime(g.watermark)))
	return appendWindows(dst, g.windows)
}

// checkpoint is the first entry of every generation: what the entries that
// compaction dropped leave behind.
type checkpoint struct {
	watermark time.Time       // highest watermark of a GC event so far
	offsets   map[int32]int64 // highest offset appended per partition so far
}

func appendCheckpoint(dst []byte, c *checkpoint) []byte {
	dst = appendHeader(dst, kindCheckpoint)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(encodeTime(c.watermark)))
	dst = binary.AppendUvarint(dst, uint64(len(c.offsets)))
	for _, p := range sortedPartitions(c.offsets) {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(p))
		dst = binary.LittleEndian.AppendUint64(dst, uint64(c.offsets[p]))
	}
	return dst
}

// record is one decoded entry of any kind.
type record struct {
	header
	msg Entry      // kind message
	gc  gcEvent    // kind GC
	cp  checkpoint // kind checkpoint
}

// decodeHeader checks an entry's crc and version and returns its header.
// A crc mismatch or a short entry is damage (errDamaged); a matching crc
// with another version is a *VersionError.
func decodeHeader(e []byte) (header, error) {
	if len(e) < headerSize {
		return header{}, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", errDamaged, len(e), headerSize)
	}
	if got, want := crc32c.Checksum(e[4:]), binary.LittleEndian.Uint32(e); got != want {
		return header{}, fmt.Errorf("%w: crc32c %08x, stored %08x", errDamaged, got, want)
	}
	return parseHeader(e)
}

// parseHeader returns the header of an entry whose crc was already checked.
func parseHeader(e []byte) (header, error) {
	if len(e) < headerSize {
		return header{}, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", errDamaged, len(e), headerSize)
	}
	if e[4] != formatVersion {
		return header{}, &VersionError{Version: e[4]}
	}
	return header{kind: e[5], flags: e[6], batch: binary.LittleEndian.Uint64(e[7:])}, nil
}

// decoder decodes entries, carving key and window slices and message IDs
// out of arenas it refills in chunks, and interning key strings (keyed
// windows repeat the same keys), so that a replay allocates per chunk and
// per distinct key, not per entry. Keys and IDs are copies; a value
// aliases the input bytes.
type decoder struct {
	keys    []string
	windows []Window
	ids     []byte // the message IDs' arena: written once, then only read
	intern  map[string]string
}

// idChunk is the size of the arena chunks message IDs are copied into: one
// allocation per chunk instead of one per ID.
const idChunk = 16 << 10

// id returns a copy of b as a string carved out of the ID arena. The arena
// bytes are never written again, so the string stays immutable; a chunk
// lives as long as any ID in it.
func (d *decoder) id(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if cap(d.ids)-len(d.ids) < len(b) {
		d.ids = make([]byte, 0, max(len(b), idChunk))
	}
	start := len(d.ids)
	d.ids = append(d.ids, b...)
	return unsafe.String(&d.ids[start], len(b))
}

// maxInterned bounds the interned keys; past it the table starts over.
const maxInterned = 1 << 16

// key returns b as a string, the same string for the same bytes.
func (d *decoder) key(b []byte) string {
	if s, ok := d.intern[string(b)]; ok { // no allocation for the lookup
		return s
	}
	if d.intern == nil || len(d.intern) >= maxInterned {
		d.intern = make(map[string]string)
	}
	s := string(b)
	d.intern[s] = s
	return s
}

// decode decodes a whole entry, header and body.
func (d *decoder) decode(e []byte) (record, error) {
	h, err := decodeHeader(e)
	if err != nil {
		return record{}, err
	}
	return d.decodeBody(h, e)
}

// decodeBody decodes the body of entry e, whose header decodeHeader
// returned as h (so its crc was checked).
func (d *decoder) decodeBody(h header, e []byte) (record, error) {
	r := record{header: h}
	b := body{b: e[headerSize:]}
	switch h.kind {
	case kindMessage:
		m := &r.msg
		m.Partition = int32(b.u32())
		m.Offset = int64(b.u64())
		m.EventTime = decodeTime(int64(b.u64()))
		m.ID = d.id(b.bytes())
		if n := b.count(1); n > 0 {
			m.Keys = d.takeKeys(n)
			for i := range m.Keys {
				m.Keys[i] = d.key(b.bytes())
			}
		}
		m.Windows = d.readWindows(&b)
		if b.err == nil && len(m.Windows) == 0 {
			b.fail("a message entry without windows")
		}
		m.Value = b.b
		if len(m.Value) == 0 {
			m.Value = nil
		}
	case kindGC:
		r.gc.watermark = decodeTime(int64(b.u64()))
		r.gc.windows = d.readWindows(&b)
		b.end()
	case kindCheckpoint:
		r.cp.watermark = decodeTime(int64(b.u64()))
		n := b.count(12)
		r.cp.offsets = make(map[int32]int64, n)
		for range n {
			p := int32(b.u32())
			r.cp.offsets[p] = int64(b.u64())
		}
		b.end()
	default:
		return record{}, fmt.Errorf("%w: unknown entry kind %d", errDamaged, h.kind)
	}
	if b.err != nil {
		return record{}, b.err
	}
	return r, nil
}

func (d *decoder) readWindows(b *body) []Window {
	n := b.count(windowSize)
	if n == 0 {
		return nil
	}
	ws := d.takeWindows(n)
	for i := range ws {
		ws[i] = Window{
			Start:   decodeTime(int64(b.u64())),
			End:     decodeTime(int64(b.u64())),
			Session: b.u64(),
		}
	}
	return ws
}

const arenaChunk = 4096

func (d *decoder) takeKeys(n int) []string {
	if len(d.keys) < n {
		d.keys = make([]string, max(n, arenaChunk))
	}
	s := d.keys[:n:n]
	d.keys = d.keys[n:]
	return s
}

func (d *decoder) takeWindows(n int) []Window {
	if len(d.windows) < n {
		d.windows = make([]Window, max(n, arenaChunk))
	}
	s := d.windows[:n:n]
	d.windows = d.windows[n:]
	return s
}

// body reads an entry body; the first short read sets err and makes every
// later read return zero, so a decode checks once at the end.
type body struct {
	b   []byte
	err error
}

func (b *body) fail(format string, args ...any) {
	if b.err == nil {
		b.err = fmt.Errorf("%w: %s", errDamaged, fmt.Sprintf(format, args...))
	}
	b.b = nil
}

func (b *body) take(n int) []byte {
	if b.err != nil {
		return nil
	}
	if len(b.b) < n {
		b.fail("entry body ends %d bytes early", n-len(b.b))
		return nil
	}
	s := b.b[:n]
	b.b = b.b[n:]
	return s
}

func (b *body) u32() uint32 {
	if s := b.take(4); s != nil {
		return binary.LittleEndian.Uint32(s)
	}
	return 0
}

func (b *body) u64() uint64 {
	if s := b.take(8); s != nil {
		return binary.LittleEndian.Uint64(s)
	}
	return 0
}

func (b *body) uvarint() uint64 {
	if b.err != nil {
		return 0
	}
	v, n := binary.Uvarint(b.b)
	if n <= 0 {
		b.fail("bad uvarint")
		return 0
	}
	b.b = b.b[n:]
	return v
}

// count reads a number of items of at least min bytes each, refusing one
// the rest of the body cannot hold (so a damaged count allocates nothing).
func (b *body) count(min int) int {
	n := b.uvarint()
	if b.err == nil && n > uint64(len(b.b)/min) {
		b.fail("count %d does not fit in %d bytes", n, len(b.b))
		return 0
	}
	return int(n)
}

// bytes reads a length-prefixed byte string.
func (b *body) bytes() []byte {
	n := b.uvarint()
	if b.err == nil && n > uint64(len(b.b)) {
		b.fail("string of %d bytes in %d", n, len(b.b))
		return nil
	}
	return b.take(int(n))
}

// end checks that the body was read whole.
func (b *body) end() {
	if b.err == nil && len(b.b) != 0 {
		b.fail("%d bytes after the entry body", len(b.b))
	}
}
