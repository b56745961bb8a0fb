package vertex

import (
	"fmt"
	"time"

	"github.com/runnel-dev/runnel/internal/window"
)

// WindowKind is how a reduce vertex groups messages in event time.
type WindowKind uint8

const (
	// FixedWindows are tumbling windows of one length: each message belongs
	// to exactly one.
	FixedWindows WindowKind = iota + 1
	// SlidingWindows have a length and a slide: a new window starts every
	// slide, so a message belongs to about length/slide windows.
	SlidingWindows
	// SessionWindows group a key's messages until a gap without messages;
	// sessions of one key merge when a message bridges them.
	SessionWindows
)

// String returns "fixed", "sliding" or "session".
func (k WindowKind) String() string {
	switch k {
	case FixedWindows:
		return "fixed"
	case SlidingWindows:
		return "sliding"
	case SessionWindows:
		return "session"
	}
	return fmt.Sprintf("WindowKind(%d)", k)
}

// Window is the event-time interval [Start, End) a reduce result covers.
type Window struct {
	Start, End time.Time
}

// EventTime is the event time of the window's results: End - 1ms, the last
// instant (at millisecond precision) the window covers, so a downstream
// window assigns the result to the window that contains its end.
func (w Window) EventTime() time.Time { return w.End.Add(-time.Millisecond) }

// String formats w as [start, end) in RFC 3339 with nanoseconds, UTC.
func (w Window) String() string {
	return "[" + w.Start.UTC().Format(time.RFC3339Nano) + ", " + w.End.UTC().Format(time.RFC3339Nano) + ")"
}

// Windowing says how a reduce vertex assigns messages to windows and when
// a window closes. Build it with [Fixed], [Sliding] or [Session] and refine
// it with WithOffset and WithAllowedLateness; it is validated (Validate)
// when the pipeline starts.
//
// Windows are aligned on the Unix epoch plus Offset: a fixed window of
// length L starts at offset + k*L. A window closes, and its results are
// emitted, when the vertex watermark reaches End + AllowedLateness; a
// message for a window that is closed (watermark >= End + AllowedLateness)
// is late. A message inside the lateness (watermark past End, below End +
// AllowedLateness) is still added to its window.
//
// Lateness is judged against the watermark a message is read with (its
// Message.Watermark), not against when its event happened or when it was
// written: the windows that watermark closes are closed before the message
// is added, and it never joins one of them (a session closed at it is not
// merged either). So the same input gives the same results however it is
// batched, but how fast it is read matters: records replayed at full speed
// are read while the watermark is still behind them, and fewer of them are
// late than when they arrived in real time (docs/benchmarks.md has a
// run at two read rates). Late
// messages reach the late stream with headers saying what made them late
// ([LateWatermarkHeader], [LateWindowEndHeader], [LateClosedAtHeader]).
type Windowing struct {
	Kind            WindowKind
	Length          time.Duration // fixed and sliding: the window length
	Slide           time.Duration // sliding: the distance between window starts
	Gap             time.Duration // session: the gap that ends a session
	Offset          time.Duration // fixed and sliding: shifts the epoch alignment
	AllowedLateness time.Duration // how long after End a window still accepts messages
}

// Fixed returns tumbling windows of length.
func Fixed(length time.Duration) Windowing { return Windowing{Kind: FixedWindows, Length: length} }

// Sliding returns windows of length starting every slide (slide <= length).
func Sliding(length, slide time.Duration) Windowing {
	return Windowing{Kind: SlidingWindows, Length: length, Slide: slide}
}

// Session returns per-key session windows that end after gap without a
// message. A message at t opens [t, t+gap); windows of one key that
// overlap or touch (one's end equals the other's start) merge, as in Flink.
func Session(gap time.Duration) Windowing { return Windowing{Kind: SessionWindows, Gap: gap} }

// WithOffset shifts the epoch alignment of fixed and sliding windows by d
// (0 <= d < Length for fixed, < Slide for sliding).
func (w Windowing) WithOffset(d time.Duration) Windowing { w.Offset = d; return w }

// WithAllowedLateness keeps windows open for d after their end: messages
// arriving then are still counted, and the result waits for it.
func (w Windowing) WithAllowedLateness(d time.Duration) Windowing { w.AllowedLateness = d; return w }

// Validate reports the first problem of w as an *OptionError naming the
// field: a length, slide or gap that is not positive, a slide above the
// length, an offset outside [0, period), a negative lateness.
func (w Windowing) Validate() error {
	bad := func(opt string, v any, reason string) error {
		return &OptionError{Option: "Window." + opt, Value: v, Reason: reason}
	}
	if w.AllowedLateness < 0 {
		return bad("AllowedLateness", w.AllowedLateness, "must not be negative")
	}
	switch w.Kind {
	case FixedWindows, SlidingWindows:
		if w.Length <= 0 {
			return bad("Length", w.Length, "must be positive")
		}
		period := w.Length
		if w.Kind == SlidingWindows {
			if w.Slide <= 0 {
				return bad("Slide", w.Slide, "must be positive")
			}
			if w.Slide > w.Length {
				return bad("Slide", w.Slide, fmt.Sprintf("must not exceed Length (%v): messages between windows would belong to none", w.Length))
			}
			period = w.Slide
		}
		if w.Offset < 0 || w.Offset >= period {
			return bad("Offset", w.Offset, fmt.Sprintf("must be in [0, %v)", period))
		}
	case SessionWindows:
		if w.Gap <= 0 {
			return bad("Gap", w.Gap, "must be positive")
		}
		if w.Offset != 0 {
			return bad("Offset", w.Offset, "session windows are not aligned: must be 0")
		}
	default:
		return bad("Kind", w.Kind, "must be FixedWindows, SlidingWindows or SessionWindows (use Fixed, Sliding or Session)")
	}
	return nil
}

// Assign returns the windows a message with event time t belongs to: one
// for fixed windows; for sliding windows every window with start <= t <
// end, latest start first (as Flink's SlidingEventTimeWindows); for
// sessions the proto-session [t, t+Gap), which the reduce merges with the
// key's open sessions. w must be valid.
func (w Windowing) Assign(t time.Time) []Window {
	ivs := window.Spec{Kind: uint8(w.Kind), Length: int64(w.Length), Slide: int64(w.Slide),
		Gap: int64(w.Gap), Offset: int64(w.Offset), AllowedLateness: int64(w.AllowedLateness)}.Assign(t.UnixNano(), nil)
	out := make([]Window, len(ivs))
	for i, iv := range ivs {
		out[i] = Window{Start: time.Unix(0, iv.Start).UTC(), End: time.Unix(0, iv.End).UTC()}
	}
	return out
}
