package vertex

import (
	"errors"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/window"
	"github.com/runnel-dev/runnel/isb"
)

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
		if !errors.As(err, &oe) || oe.Option != tt.option || !errors.Is(err, isb.ErrInvalidOption) {
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

// The runtime computes windows with internal/window, whose kinds must be
// vertex's.
func TestWindowKindsMatchTheRuntime(t *testing.T) {
	if FixedWindows != WindowKind(window.Fixed) || SlidingWindows != WindowKind(window.Sliding) || SessionWindows != WindowKind(window.Session) {
		t.Fatalf("kinds %d %d %d, internal/window %d %d %d", FixedWindows, SlidingWindows, SessionWindows, window.Fixed, window.Sliding, window.Session)
	}
}
