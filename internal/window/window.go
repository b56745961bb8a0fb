// Package window is the window arithmetic of reduce vertices in Unix
// nanoseconds: which windows an event time belongs to and when a window
// closes. vertex.Windowing describes windows to a pipeline author; the
// runtime computes with a [Spec] made from it, whose intervals are
// comparable and cheap to hash as map keys.
package window

// The kinds of a [Spec]; they equal vertex's FixedWindows, SlidingWindows
// and SessionWindows.
const (
	Fixed   uint8 = iota + 1 // tumbling windows of Length
	Sliding                  // windows of Length starting every Slide
	Session                  // per-key sessions ending after Gap without a message
)

// Interval is a window in Unix nanoseconds, [Start, End).
type Interval struct {
	Start, End int64
}

// Spec is a valid vertex.Windowing in Unix nanoseconds.
type Spec struct {
	Kind                                        uint8 // Fixed, Sliding or Session
	Length, Slide, Gap, Offset, AllowedLateness int64
}

// Assign appends to dst the windows a message with event time t (Unix
// nanoseconds) belongs to and returns the extended slice: one for fixed
// windows; for sliding windows every window with start <= t < end, latest
// start first (Flink's SlidingEventTimeWindows.assignWindows); for
// sessions the proto-session [t, t+Gap), which the reduce merges with the
// key's open sessions.
func (s Spec) Assign(t int64, dst []Interval) []Interval {
	switch s.Kind {
	case Fixed:
		start := alignedStart(t, s.Offset, s.Length)
		return append(dst, Interval{Start: start, End: start + s.Length})
	case Sliding:
		for start := alignedStart(t, s.Offset, s.Slide); start > t-s.Length; start -= s.Slide {
			dst = append(dst, Interval{Start: start, End: start + s.Length})
		}
		return dst
	case Session:
		return append(dst, Interval{Start: t, End: t + s.Gap})
	}
	return dst
}

// alignedStart is the start of the period-aligned window containing t:
// Flink's TimeWindow.getWindowStartWithOffset, with a floored remainder so
// that event times before the epoch (or before the offset) align too.
func alignedStart(t, offset, period int64) int64 {
	rem := (t - offset) % period
	if rem < 0 {
		rem += period
	}
	return t - rem
}

// ClosedAt reports whether a window ending at end (Unix nanoseconds) is
// closed at watermark wm: wm >= end + AllowedLateness. A message whose
// windows are all closed is late.
func (s Spec) ClosedAt(end, wm int64) bool { return wm >= end+s.AllowedLateness }
