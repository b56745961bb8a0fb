package watermark

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// WMB (watermark block) is what a processor publishes for one partition it
// writes: no message it writes to Partition after Offset has an event time
// below Watermark. Idle marks a partition the processor has stopped writing
// to; Offset is then the offset of the control message it wrote there.
//
// Watermark is a time.Time, like every event time and watermark in runnel,
// so no caller converts units; the zero Time means "no watermark yet". It is
// encoded as int64 Unix nanoseconds, which holds every instant between the
// years 1678 and 2262 exactly: a WMB survives Encode/Decode unchanged (up to
// time.Location, which a watermark does not carry).
type WMB struct {
	Offset    int64
	Watermark time.Time
	Idle      bool
	Partition int32
}

// Encoding, version 1, big-endian, 22 bytes:
//
//	[0]      version (1)
//	[1]      flags: bit 0 idle; the other bits must be zero
//	[2:6]    partition, int32 >= 0
//	[6:14]   offset, int64 >= 0
//	[14:22]  watermark, int64 Unix nanoseconds; math.MinInt64 is the zero Time
//
// The version byte comes first so a later layout can be told apart; a
// decoder refuses versions it does not know rather than guessing.
const (
	wmbVersion  = 1
	wmbSize     = 22
	flagIdle    = 1
	zeroTimeNs  = math.MinInt64
	minEncodeNs = math.MinInt64 + 1
)

var minEncodable = time.Unix(0, minEncodeNs)

// Max is the final watermark of a stream that ended: the latest time a WMB
// encodes (2262-04-11T23:47:16.854775807Z). A bounded source publishes it
// when it is exhausted, with its end-of-stream message, and every vertex
// downstream reaches it once all its inputs ended, so windows close and
// flush. Compare with Equal.
var Max = time.Unix(0, math.MaxInt64).UTC()

// AppendBinary appends the encoding of w to b. It fails with ErrRange for a
// negative offset or partition, or a watermark outside 1678-2262.
func (w WMB) AppendBinary(b []byte) ([]byte, error) {
	if w.Partition < 0 {
		return b, fmt.Errorf("%w: WMB partition %d is negative", ErrRange, w.Partition)
	}
	if w.Offset < 0 {
		return b, fmt.Errorf("%w: WMB offset %d of partition %d is negative", ErrRange, w.Offset, w.Partition)
	}
	ns, err := timeToNanos(w.Watermark)
	if err != nil {
		return b, fmt.Errorf("%w (WMB of partition %d offset %d)", err, w.Partition, w.Offset)
	}
	var flags byte
	if w.Idle {
		flags |= flagIdle
	}
	b = append(b, wmbVersion, flags)
	b = binary.BigEndian.AppendUint32(b, uint32(w.Partition))
	b = binary.BigEndian.AppendUint64(b, uint64(w.Offset))
	return binary.BigEndian.AppendUint64(b, uint64(ns)), nil
}

// MarshalBinary encodes w (see AppendBinary).
func (w WMB) MarshalBinary() ([]byte, error) { return w.AppendBinary(make([]byte, 0, wmbSize)) }

// UnmarshalBinary decodes what MarshalBinary produced. Any other input is
// an ErrDecode naming the problem; w is unchanged then.
func (w *WMB) UnmarshalBinary(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: WMB: empty input", ErrDecode)
	}
	if b[0] != wmbVersion {
		return fmt.Errorf("%w: WMB: unknown version %d (this build reads %d)", ErrDecode, b[0], wmbVersion)
	}
	if len(b) != wmbSize {
		return fmt.Errorf("%w: WMB: %d bytes, want %d", ErrDecode, len(b), wmbSize)
	}
	if b[1]&^flagIdle != 0 {
		return fmt.Errorf("%w: WMB: unknown flags %#02x", ErrDecode, b[1])
	}
	p := int32(binary.BigEndian.Uint32(b[2:6]))
	off := int64(binary.BigEndian.Uint64(b[6:14]))
	ns := int64(binary.BigEndian.Uint64(b[14:22]))
	if p < 0 {
		return fmt.Errorf("%w: WMB: negative partition %d", ErrDecode, p)
	}
	if off < 0 {
		return fmt.Errorf("%w: WMB: negative offset %d", ErrDecode, off)
	}
	*w = WMB{Offset: off, Watermark: nanosToTime(ns), Idle: b[1]&flagIdle != 0, Partition: p}
	return nil
}

// String formats w for logs.
func (w WMB) String() string {
	wm := "none"
	if !w.Watermark.IsZero() {
		wm = w.Watermark.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("WMB{partition %d offset %d watermark %s idle %t}", w.Partition, w.Offset, wm, w.Idle)
}

func timeToNanos(t time.Time) (int64, error) {
	if t.IsZero() {
		return zeroTimeNs, nil
	}
	if t.Before(minEncodable) || t.After(Max) {
		return 0, fmt.Errorf("%w: time %s is outside 1678-2262", ErrRange, t.Format(time.RFC3339))
	}
	return t.UnixNano(), nil
}

func nanosToTime(ns int64) time.Time {
	if ns == zeroTimeNs {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}
