// Package envelope is the binary form of a [vertex.Message] in durable and
// remote storage: the runtime encodes every message a pipeline buffer on
// such storage holds with [Codec]. It is internal: a pipeline author never
// encodes a message, and the encoding is versioned ([Version]) so that a
// buffer written by another build is refused at open instead of misread.
package envelope

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/runnel-dev/runnel/internal/origin"
	"github.com/runnel-dev/runnel/isb/codec"
	"github.com/runnel-dev/runnel/vertex"
)

// The envelope encoding: how durable and remote storage store a [vertex.Message].
// Memory storage never encodes; it passes messages as they are.
//
// Version 1. Integers are unsigned varints (encoding/binary Uvarint) unless
// marked zigzag (Varint); a string is its byte length followed by its bytes.
//
//	+---------+-------+-------------+------------------------------------+-----------+--------------+
//	| version | flags | meta length | meta (meta length bytes)           | value len | value bytes  |
//	| byte 1  | byte  | uvarint     |                                    | uvarint   | (value codec)|
//	+---------+-------+-------------+------------------------------------+-----------+--------------+
//
//	flags: bit 0 set: the event time is present (a zero EventTime is not
//	stored); bit 1 set: the origin is present; bits 2-7 must be zero.
//
//	meta:
//	  [event time: seconds since 1970 (zigzag varint), nanoseconds (uvarint, < 1e9)]  if flags bit 0
//	  ID (string)
//	  key count, keys (strings)
//	  tag count, tags (strings)
//	  header count, then per header: name (string), value (string), in name order
//
//	origin, between flags and meta length, if flags bit 1:
//	  writer (string), partition, offset, output index (uvarints)
//
// The origin (internal/origin) is the runtime's, not the user's: the
// writing map vertex and the partition, offset and output index of the
// input the message was made of, which a restarted map looks for to write
// only what it had not written. It was added to version 1 as a flag, so
// that buffers written before it still open and read (their codec name is
// the same); a build that predates it refuses a record that carries one
// (unknown flag). Decode reads it only into an origin the message already
// points to (the restart scan's); everywhere else it is skipped, so a
// message read never carries one. It lies outside the meta section so that
// a skipped origin costs no bytes of the meta's string.
//
// The value is the user's value encoded by the topic's value codec, and
// ends the envelope exactly: trailing bytes are an error. The envelope
// carries no checksum: the storage framing it does (isb/mmap: a CRC32C per
// record). What the reader sets, Watermark and Late, is never stored.
// Empty Keys, Tags and Headers decode as nil; EventTime decodes in UTC (use
// time.Time.Equal to compare).
//
// The meta section is copied out of the source once, as one string, and
// every decoded string (ID, keys, tags, header names and values) is a slice
// of it: one allocation per message for all its strings.
const (
	// Version is the version of the envelope encoding this build
	// writes and the only one it reads.
	Version = 1

	flagEventTime = 1 << 0
	flagOrigin    = 1 << 1
	knownFlags    = flagEventTime | flagOrigin
)

// ErrInvalid is matched by every *Error.
var ErrInvalid = errors.New("vertex: bad message envelope")

// Error reports bytes that are not a valid message envelope. It
// matches [ErrInvalid] and codec.ErrDecode, so storage that reports codec
// failures reports it as one.
type Error struct {
	Offset int    // byte offset in the envelope where the problem is
	Reason string // what is wrong there
	Err    error  // the value codec's error, if the value failed to decode
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("vertex: envelope at byte %d: %s: %v", e.Offset, e.Reason, e.Err)
	}
	return fmt.Sprintf("vertex: envelope at byte %d: %s", e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrInvalid) and errors.Is(err, codec.ErrDecode) true.
func (e *Error) Is(target error) bool {
	return target == ErrInvalid || target == codec.ErrDecode
}

// Unwrap returns the value codec's error, if any.
func (e *Error) Unwrap() error { return e.Err }

// Codec returns the codec of messages whose values value encodes,
// in the envelope encoding drawn above. Its name, "envelope1+" and the
// value codec's name, is what durable storage records as the topic's codec,
// so a topic written with another value codec or envelope version is
// refused at open.
func Codec[T any](value codec.Codec[T]) codec.Codec[vertex.Message[T]] {
	return envelopeCodec[T]{value: value, name: fmt.Sprintf("envelope%d+%s", Version, value.Name())}
}

type envelopeCodec[T any] struct {
	value codec.Codec[T]
	name  string
}

func (c envelopeCodec[T]) Name() string { return c.name }

// Append encodes m after dst.
func (c envelopeCodec[T]) Append(dst []byte, m vertex.Message[T]) ([]byte, error) {
	start := len(dst)
	flags := byte(0)
	if !m.EventTime.IsZero() {
		flags |= flagEventTime
	}
	if *origin.Of(&m) != nil {
		flags |= flagOrigin
	}
	metaLen := c.metaLen(&m, flags)
	dst = append(dst, Version, flags)
	if o := *origin.Of(&m); o != nil {
		dst = appendString(dst, o.Writer)
		dst = binary.AppendUvarint(dst, uint64(o.Partition))
		dst = binary.AppendUvarint(dst, uint64(o.Offset))
		dst = binary.AppendUvarint(dst, uint64(o.Index))
	}
	dst = binary.AppendUvarint(dst, uint64(metaLen))
	if flags&flagEventTime != 0 {
		dst = binary.AppendVarint(dst, m.EventTime.Unix())
		dst = binary.AppendUvarint(dst, uint64(m.EventTime.Nanosecond()))
	}
	dst = appendString(dst, m.ID)
	dst = appendStrings(dst, m.Keys)
	dst = appendStrings(dst, m.Tags)
	dst = binary.AppendUvarint(dst, uint64(len(m.Headers)))
	if len(m.Headers) > 0 {
		for _, k := range slices.Sorted(maps.Keys(m.Headers)) {
			dst = appendString(dst, k)
			dst = appendString(dst, m.Headers[k])
		}
	}
	// The value's length precedes it, but is known only once it is
	// encoded: reserve the longest uvarint a value can need here and
	// move the value back if it needs fewer bytes.
	lenAt := len(dst)
	dst = append(dst, make([]byte, binary.MaxVarintLen64)...)
	valAt := len(dst)
	dst, err := c.value.Append(dst, m.Value)
	if err != nil {
		return dst[:start], err
	}
	n := len(dst) - valAt
	w := binary.PutUvarint(dst[lenAt:], uint64(n))
	copy(dst[lenAt+w:], dst[valAt:])
	return dst[:lenAt+w+n], nil
}

// metaLen is the length of m's meta section.
func (c envelopeCodec[T]) metaLen(m *vertex.Message[T], flags byte) int {
	n := 0
	if flags&flagEventTime != 0 {
		n += varintLen(m.EventTime.Unix()) + uvarintLen(uint64(m.EventTime.Nanosecond()))
	}
	n += stringLen(m.ID) + stringsLen(m.Keys) + stringsLen(m.Tags)
	n += uvarintLen(uint64(len(m.Headers)))
	for k, v := range m.Headers {
		n += stringLen(k) + stringLen(v)
	}
	return n
}

// Decode replaces *m with the message encoded in src, every field
// (Watermark and Late become zero: the reader sets them). On error *m is
// the zero message. The origin is the exception: when m points to one
// already, it is replaced by the record's (the zero Origin when the record
// has none) and m keeps pointing to it; otherwise m gets none.
func (c envelopeCodec[T]) Decode(src []byte, m *vertex.Message[T]) error {
	o := *origin.Of(m)
	*m = vertex.Message[T]{}
	*origin.Of(m) = o
	if o != nil {
		*o = origin.Origin{}
	}
	if err := c.decode(src, m); err != nil {
		*m = vertex.Message[T]{}
		*origin.Of(m) = o
		if o != nil {
			*o = origin.Origin{}
		}
		return err
	}
	return nil
}

func (c envelopeCodec[T]) decode(src []byte, m *vertex.Message[T]) error {
	if len(src) < 2 {
		return &Error{Offset: len(src), Reason: fmt.Sprintf("truncated: %d bytes, a header needs 2", len(src))}
	}
	if src[0] != Version {
		return &Error{Offset: 0, Reason: fmt.Sprintf("version %d is not supported (this build reads version %d)", src[0], Version)}
	}
	flags := src[1]
	if flags&^knownFlags != 0 {
		return &Error{Offset: 1, Reason: fmt.Sprintf("unknown flags %#02x", flags&^knownFlags)}
	}
	pos := 2
	if flags&flagOrigin != 0 {
		var err error
		if pos, err = decodeOrigin(src, pos, *origin.Of(m)); err != nil {
			return err
		}
	}
	metaLen, pos, err := readUvarint(src, pos, "meta length")
	if err != nil {
		return err
	}
	if metaLen > uint64(len(src)-pos) {
		return &Error{Offset: pos, Reason: fmt.Sprintf("truncated: meta length %d, %d bytes left", metaLen, len(src)-pos)}
	}
	metaEnd := pos + int(metaLen)
	if err := decodeMeta(src[pos:metaEnd], pos, flags, m); err != nil {
		return err
	}
	valLen, pos, err := readUvarint(src, metaEnd, "value length")
	if err != nil {
		return err
	}
	if valLen != uint64(len(src)-pos) {
		return &Error{Offset: pos, Reason: fmt.Sprintf("value length %d, but %d bytes follow", valLen, len(src)-pos)}
	}
	if err := c.value.Decode(src[pos:], &m.Value); err != nil {
		return &Error{Offset: pos, Reason: "value (codec " + c.value.Name() + ")", Err: err}
	}
	return nil
}

// decodeOrigin reads the origin at pos of src into *o (nil: it is
// skipped, and nothing is allocated) and returns where it ends.
func decodeOrigin(src []byte, pos int, o *origin.Origin) (int, error) {
	r := metaReader{b: src, pos: pos}
	at := r.pos
	n := r.uvarint("origin writer length")
	if r.err == nil && n > uint64(len(src)-r.pos) {
		r.pos = at
		r.fail(fmt.Sprintf("truncated: origin writer of %d bytes, %d left", n, len(src)-r.pos))
	}
	var w []byte
	if r.err == nil {
		w = src[r.pos : r.pos+int(n)]
		r.pos += int(n)
	}
	p := r.uvarint("origin partition")
	off := r.uvarint("origin offset")
	idx := r.uvarint("origin index")
	if r.err == nil && (p > math.MaxInt32 || off > math.MaxInt64 || idx > math.MaxInt32) {
		r.pos = at
		r.fail(fmt.Sprintf("origin partition %d, offset %d or index %d out of range", p, off, idx))
	}
	if r.err != nil {
		return r.pos, r.err
	}
	if o != nil {
		*o = origin.Origin{Writer: string(w), Partition: int(p), Offset: int64(off), Index: int(idx)}
	}
	return r.pos, nil
}

// decodeMeta decodes the meta section meta, which starts at byte base of
// the envelope, into m.
func decodeMeta[T any](meta []byte, base int, flags byte, m *vertex.Message[T]) error {
	// One copy for every string of the message: meta belongs to the
	// caller, who may reuse it.
	r := metaReader{b: meta, s: string(meta), base: base}
	if flags&flagEventTime != 0 {
		sec := r.varint("event time seconds")
		at := r.pos
		nsec := r.uvarint("event time nanoseconds")
		if r.err == nil && nsec >= 1e9 {
			r.pos = at
			r.fail(fmt.Sprintf("event time nanoseconds %d out of range", nsec))
		}
		if r.err == nil {
			m.EventTime = time.Unix(sec, int64(nsec)).UTC()
		}
	}
	m.ID = r.string("ID", "ID length")
	m.Keys = r.strings("key", "key count", "key length")
	m.Tags = r.strings("tag", "tag count", "tag length")
	if n := r.count("header count", 2); n > 0 {
		m.Headers = make(map[string]string, n)
		for range n {
			k := r.string("header name", "header name length")
			v := r.string("header value", "header value length")
			if r.err != nil {
				break
			}
			if _, dup := m.Headers[k]; dup {
				r.fail(fmt.Sprintf("header %q appears twice", k))
				break
			}
			m.Headers[k] = v
		}
	}
	if r.err == nil && r.pos != len(meta) {
		r.fail(fmt.Sprintf("%d bytes after the headers inside the meta section", len(meta)-r.pos))
	}
	return r.err
}

// metaReader reads the meta section: b as bytes for varints, s as the same
// bytes in one string that decoded strings slice. The first error sticks
// and makes every later read return zero.
type metaReader struct {
	b    []byte
	s    string
	pos  int
	base int // offset of b in the envelope, for errors
	err  error
}

func (r *metaReader) fail(reason string) {
	if r.err == nil {
		r.err = &Error{Offset: r.base + r.pos, Reason: reason}
	}
}

func (r *metaReader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.pos:])
	if !r.advance(n, what) {
		return 0
	}
	return v
}

func (r *metaReader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.pos:])
	if !r.advance(n, what) {
		return 0
	}
	return v
}

// advance moves past a varint of n bytes as encoding/binary reports it
// (0: truncated, negative: overflow), or records the error.
func (r *metaReader) advance(n int, what string) bool {
	switch {
	case n == 0:
		r.fail("truncated: " + what + " missing")
		return false
	case n < 0:
		r.fail(what + " overflows 64 bits")
		return false
	}
	r.pos += n
	return true
}

// count reads a count of entries of at least minBytes each, refusing one
// the rest of the section cannot hold (so corrupt input cannot make the
// decoder allocate more than the input's size).
func (r *metaReader) count(what string, minBytes int) int {
	at := r.pos
	n := r.uvarint(what)
	if r.err != nil {
		return 0
	}
	if left := len(r.b) - r.pos; n > uint64(left/minBytes) {
		r.pos = at
		r.fail(fmt.Sprintf("%s %d, but only %d bytes are left", what, n, left))
		return 0
	}
	return int(n)
}

// string reads a length (named lengthWhat in errors) and that many bytes
// as a string (named what). The names come whole from the caller: joining
// them here cost a concatenation per string of every decoded message.
func (r *metaReader) string(what, lengthWhat string) string {
	at := r.pos
	n := r.uvarint(lengthWhat)
	if r.err != nil {
		return ""
	}
	if left := len(r.b) - r.pos; n > uint64(left) {
		r.pos = at
		r.fail(fmt.Sprintf("truncated: %s of %d bytes, %d left", what, n, left))
		return ""
	}
	s := r.s[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return s
}

// strings reads a count and that many strings; none is nil. The names are
// as string's, and countWhat names the count.
func (r *metaReader) strings(what, countWhat, lengthWhat string) []string {
	n := r.count(countWhat, 1)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.string(what, lengthWhat)
	}
	if r.err != nil {
		return nil
	}
	return out
}

func varintLen(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func stringLen(s string) int { return uvarintLen(uint64(len(s))) + len(s) }

func stringsLen(ss []string) int {
	n := uvarintLen(uint64(len(ss)))
	for _, s := range ss {
		n += stringLen(s)
	}
	return n
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ss)))
	for _, s := range ss {
		dst = appendString(dst, s)
	}
	return dst
}

// readUvarint reads a uvarint of src at pos, naming what in its error.
func readUvarint(src []byte, pos int, what string) (uint64, int, error) {
	r := metaReader{b: src, pos: pos}
	v := r.uvarint(what)
	return v, r.pos, r.err
}
