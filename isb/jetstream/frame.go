package jetstream

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/runnel-dev/runnel/internal/crc32c"
)

// Frames: the payload of one message of a packed stream (see Packed and
// the package doc, which draws it).
//
// A frame is written once, by one append, and read many times at any item
// inside it, so the lengths of the items come first: a reader reaches item
// i by summing i lengths, without decoding the items before it. The
// checksum covers the whole frame: a message published into the stream
// by something other than this package, or cut short, is refused as a
// whole (one damaged record) rather than read as wrong items.

// frameVersion is the first byte of every frame.
const frameVersion = 1

// frameShift is how many low bits of an offset of a packed stream hold the
// index of an item inside its frame: offset = (sequence-1)<<frameShift |
// index. It bounds a frame to 1<<frameShift items and a stream to 1<<47
// messages.
const frameShift = 16

// MaxFrameItems is the most items a frame holds (1<<16).
const MaxFrameItems = 1 << frameShift

// ErrFrame is matched by the error of a message of a packed stream that is
// not a frame (a *DecodeError, which matches isb.ErrCorrupt too).
var ErrFrame = errors.New("jetstream: message is not a runnel frame")

// appendFrame appends to dst the frame of the items whose encodings are
// payload[ends[i-1]:ends[i]] (ends[-1] being 0).
func appendFrame(dst, payload []byte, ends []int) []byte {
	start := len(dst)
	dst = append(dst, frameVersion)
	dst = binary.AppendUvarint(dst, uint64(len(ends)))
	prev := 0
	for _, e := range ends {
		dst = binary.AppendUvarint(dst, uint64(e-prev))
		prev = e
	}
	dst = append(dst, payload[:prev]...)
	return binary.BigEndian.AppendUint32(dst, crc32c.Checksum(dst[start:]))
}

// frameSize is the size of the frame of items of total bytes whose
// lengths take lens bytes as uvarints.
func frameSize(total, lens, n int) int {
	return 1 + uvarintLen(uint64(n)) + lens + total + 4
}

// uvarintLen is the size of x as a uvarint.
func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// frame is a parsed frame: item i is data[ends[i]-len_i : ends[i]], with
// starts kept beside the ends.
type frame struct {
	data   []byte
	starts []int
	ends   []int
}

// count is how many items the frame holds.
func (f *frame) count() int { return len(f.ends) }

// item returns the encoding of item i.
func (f *frame) item(i int) []byte { return f.data[f.starts[i]:f.ends[i]:f.ends[i]] }

// parseFrame parses data into f, reusing f's slices. An error (matching
// ErrFrame) says what is wrong; f is then unusable.
func parseFrame(data []byte, f *frame) error {
	if len(data) < 1+1+4 {
		return fmt.Errorf("%w: %d bytes, shorter than any frame", ErrFrame, len(data))
	}
	body := data[:len(data)-4]
	if sum, want := crc32c.Checksum(body), binary.BigEndian.Uint32(data[len(body):]); sum != want {
		return fmt.Errorf("%w: checksum %08x, stored %08x", ErrFrame, sum, want)
	}
	if body[0] != frameVersion {
		return fmt.Errorf("%w: version %d", ErrFrame, body[0])
	}
	pos := 1
	n, k := binary.Uvarint(body[pos:])
	if k <= 0 || n < 1 || n > MaxFrameItems {
		return fmt.Errorf("%w: item count", ErrFrame)
	}
	pos += k
	count := int(n)
	f.starts = growInts(f.starts, count)
	f.ends = growInts(f.ends, count)
	// The lengths are read first (ends relative to the items' start), then
	// moved past the index once its size is known.
	total := 0
	for i := range count {
		l, k := binary.Uvarint(body[pos:])
		if k <= 0 || l > uint64(len(body)) {
			return fmt.Errorf("%w: length of item %d", ErrFrame, i)
		}
		pos += k
		f.starts[i] = total
		total += int(l)
		f.ends[i] = total
	}
	if pos+total != len(body) {
		return fmt.Errorf("%w: items of %d bytes in %d", ErrFrame, total, len(body)-pos)
	}
	for i := range count {
		f.starts[i] += pos
		f.ends[i] += pos
	}
	f.data = body
	return nil
}

// growInts returns s with length n, reusing its array when it is large
// enough.
func growInts(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	return s[:n]
}

// Offsets of a packed stream: the message's sequence and the item's index
// in its frame. An unpacked stream is the case shift 0: one item per
// message at offset sequence-1.

// join is the offset of item idx of the message at seq; join(seq, count)
// is the end of a frame of count items (the next frame's first offset when
// the frame is full).
func join(seq uint64, idx int, shift uint) int64 { return int64(seq-1)<<shift + int64(idx) }

// split is the sequence and index of offset.
func split(offset int64, shift uint) (seq uint64, idx int) {
	return uint64(offset>>shift) + 1, int(offset & (1<<shift - 1))
}
