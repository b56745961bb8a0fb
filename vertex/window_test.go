package vertex

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// flinkSliding is Flink's SlidingEventTimeWindows.assignWindows as its
// source states it (for timestamps at or after offset, where Java's % and
// a floored remainder agree):
//
//	lastStart = timestamp - (timestamp - offset + slide) % slide
//	for (start = lastStart; start > timestamp - size; start -= slide)
//	    windows.add(new TimeWindow(start, start + size))
func flinkSliding(ts, size, slide, offset int64) []Interval {
	var out []Interval
	lastStart := ts - (ts-offset+slide)%slide
	for start := lastStart; start > ts-size; start -= slide {
		out = append(out, Interval{Start: start, End: start + size})
	}
	return out
}

// bruteSliding is the definition: every window offset + k*slide that
// contains ts, latest start first; it works for any ts.
func bruteSliding(ts, size, slide, offset int64) []Interval {
	var out []Interval
	// The k of the latest start at or before ts, found by stepping.
	k := (ts - offset) / slide
	for offset+k*slide > ts {
		k--
	}
	for offset+(k+1)*slide <= ts {
		k++
	}
	for ; offset+k*slide > ts-size; k-- {
		out = append(out, Interval{Start: offset + k*slide, End: offset + k*slide + size})
	}
	return out
}

// Sliding assignment matches Flink's formula for timestamps at or after the
// offset and the definition everywhere (also before the epoch), and a
// message belongs to length/slide windows when slide divides length.
func TestSlidingAssignmentMatchesFlink(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		slide := 1 + r.Int64N(50)
		size := slide * (1 + r.Int64N(6))
		if r.IntN(3) == 0 {
			size = slide + r.Int64N(5*slide) // not a multiple of slide
		}
		offset := r.Int64N(slide)
		ts := r.Int64N(1_000_000) - 500_000
		w := Sliding(time.Duration(size), time.Duration(slide)).WithOffset(time.Duration(offset))
		if err := w.Validate(); err != nil {
			t.Fatal(err)
		}
		got := w.AssignUnixNano(ts, nil)
		if want := bruteSliding(ts, size, slide, offset); !slices.Equal(got, want) {
			t.Fatalf("Sliding(%d,%d) offset %d at %d: got %v, want %v", size, slide, offset, ts, got, want)
		}
		if ts >= offset {
			if want := flinkSliding(ts, size, slide, offset); !slices.Equal(got, want) {
				t.Fatalf("Sliding(%d,%d) offset %d at %d: got %v, Flink %v", size, slide, offset, ts, got, want)
			}
		}
		if size%slide == 0 && int64(len(got)) != size/slide {
			t.Fatalf("Sliding(%d,%d) at %d: %d windows, want length/slide = %d", size, slide, ts, len(got), size/slide)
		}
	}
}

// Fixed windows are aligned on the epoch plus the offset: an hourly window
// with a 15 minute offset runs from :15 to :15.
func TestFixedEpochAlignmentWithOffset(t *testing.T) {
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	at := func(h, m, s int, ns int) time.Time {
		return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second + time.Duration(ns))
	}
	hourly := Fixed(time.Hour)
	quarter := Fixed(time.Hour).WithOffset(15 * time.Minute)
	tests := []struct {
		w          Windowing
		t          time.Time
		start, end time.Time
	}{
		{hourly, at(10, 0, 0, 0), at(10, 0, 0, 0), at(11, 0, 0, 0)},               // a start belongs to its window
		{hourly, at(10, 59, 59, 999_999_999), at(10, 0, 0, 0), at(11, 0, 0, 0)},   // the end does not
		{quarter, at(10, 20, 0, 0), at(10, 15, 0, 0), at(11, 15, 0, 0)},           // offset
		{quarter, at(10, 14, 59, 999_999_999), at(9, 15, 0, 0), at(10, 15, 0, 0)}, // one instant before the offset start
		{quarter, at(10, 15, 0, 0), at(10, 15, 0, 0), at(11, 15, 0, 0)},           // at it
		{Fixed(time.Second), time.Unix(0, -1), time.Unix(-1, 0), time.Unix(0, 0)}, // before the epoch
		{Fixed(10 * time.Millisecond).WithOffset(3 * time.Millisecond), time.Unix(0, 2_999_999), time.Unix(0, -7_000_000), time.Unix(0, 3_000_000)},
	}
	for _, tt := range tests {
		got := tt.w.Assign(tt.t)
		if len(got) != 1 || !got[0].Start.Equal(tt.start) || !got[0].End.Equal(tt.end) {
			t.Errorf("%v offset %v at %v: got %v, want [%v, %v)", tt.w.Length, tt.w.Offset, tt.t, got, tt.start, tt.end)
		}
	}
	if got := Sliding(time.Minute, 20*time.Second).WithOffset(5 * time.Second).Assign(at(10, 0, 30, 0)); len(got) != 3 ||
		!got[0].Start.Equal(at(10, 0, 25, 0)) || !got[1].Start.Equal(at(10, 0, 5, 0)) || !got[2].Start.Equal(at(9, 59, 45, 0)) {
		t.Errorf("Sliding(1m, 20s) offset 5s at 10:00:30: %v; want starts 10:00:25, 10:00:05, 09:59:45", got)
	}
	if got := Session(time.Minute).Assign(at(10, 0, 30, 0)); len(got) != 1 || !got[0].Start.Equal(at(10, 0, 30, 0)) || !got[0].End.Equal(at(10, 1, 30, 0)) {
		t.Errorf("Session(1m) at 10:00:30: %v; want the proto-session [10:00:30, 10:01:30)", got)
	}
	if et := (Window{Start: at(10, 0, 0, 0), End: at(11, 0, 0, 0)}).EventTime(); !et.Equal(at(10, 59, 59, 999_000_000)) {
		t.Errorf("EventTime of [10:00, 11:00) = %v, want end - 1ms", et)
	}
}

// A window closes at exactly end + allowed lateness: one instant below it
// is open, at and above it is closed.
func TestClosedAtLatenessBoundary(t *testing.T) {
	const end = int64(10_000)
	for _, lateness := range []time.Duration{0, 1, 5000} {
		w := Fixed(10_000).WithAllowedLateness(lateness)
		closeAt := end + int64(lateness)
		if w.ClosedAt(end, closeAt-1) {
			t.Errorf("lateness %v: closed at end+lateness-1", lateness)
		}
		if !w.ClosedAt(end, closeAt) || !w.ClosedAt(end, closeAt+1) {
			t.Errorf("lateness %v: open at end+lateness or above", lateness)
		}
	}
}

func TestWindowingValidate(t *testing.T) {
	tests := []struct {
		w      Windowing
		option string
	}{
		{Fixed(0), "Window.Length"},
		{Fixed(-time.Second), "Window.Length"},
		{Sliding(0, time.Second), "Window.Length"},
		{Sliding(time.Second, 0), "Window.Slide"},
		{Sliding(time.Second, -1), "Window.Slide"},
		{Sliding(time.Second, 2*time.Second), "Window.Slide"},
		{Session(0), "Window.Gap"},
		{Session(-time.Second), "Window.Gap"},
		{Fixed(time.Second).WithAllowedLateness(-1), "Window.AllowedLateness"},
		{Session(time.Second).WithAllowedLateness(-time.Second), "Window.AllowedLateness"},
		{Fixed(time.Second).WithOffset(time.Second), "Window.Offset"},
		{Fixed(time.Second).WithOffset(-1), "Window.Offset"},
		{Sliding(time.Minute, time.Second).WithOffset(time.Second), "Window.Offset"},
		{Session(time.Second).WithOffset(1), "Window.Offset"},
		{Windowing{}, "Window.Kind"},
	}
	for _, tt := range tests {
		err := tt.w.Validate()
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != tt.option || !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%+v: Validate() = %v, want an *OptionError for %s", tt.w, err, tt.option)
		}
	}
	for _, ok := range []Windowing{Fixed(1), Sliding(time.Second, time.Second), Sliding(time.Minute, 7*time.Second).WithOffset(6 * time.Second),
		Session(1).WithAllowedLateness(time.Hour), Fixed(time.Hour).WithOffset(59 * time.Minute)} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: Validate() = %v, want nil", ok, err)
		}
	}
	var oe *OptionError
	if err := (Aggregator[int, int, int]{Create: func() int { return 0 }, Add: func(a int, _ Message[int]) int { return a }, Result: func(a int) int { return a }}).Validate(SessionWindows); !errors.As(err, &oe) || oe.Option != "Aggregator.Merge" {
		t.Errorf("an aggregator without Merge for sessions: %v, want Aggregator.Merge refused", err)
	}
	if err := Counting[int]().Validate(SessionWindows); err != nil {
		t.Errorf("Counting: %v", err)
	}
}
