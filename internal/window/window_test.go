package window_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/window"
	"github.com/runnel-dev/runnel/vertex"
)

// spec is w as the runtime computes with it.
func spec(w vertex.Windowing) window.Spec {
	return window.Spec{Kind: uint8(w.Kind), Length: int64(w.Length), Slide: int64(w.Slide),
		Gap: int64(w.Gap), Offset: int64(w.Offset), AllowedLateness: int64(w.AllowedLateness)}
}

// flinkSliding is Flink's SlidingEventTimeWindows.assignWindows as its
// source states it (for timestamps at or after offset, where Java's % and
// a floored remainder agree):
//
//	lastStart = timestamp - (timestamp - offset + slide) % slide
//	for (start = lastStart; start > timestamp - size; start -= slide)
//	    windows.add(new TimeWindow(start, start + size))
func flinkSliding(ts, size, slide, offset int64) []window.Interval {
	var out []window.Interval
	lastStart := ts - (ts-offset+slide)%slide
	for start := lastStart; start > ts-size; start -= slide {
		out = append(out, window.Interval{Start: start, End: start + size})
	}
	return out
}

// bruteSliding is the definition: every window offset + k*slide that
// contains ts, latest start first; it works for any ts.
func bruteSliding(ts, size, slide, offset int64) []window.Interval {
	var out []window.Interval
	// The k of the latest start at or before ts, found by stepping.
	k := (ts - offset) / slide
	for offset+k*slide > ts {
		k--
	}
	for offset+(k+1)*slide <= ts {
		k++
	}
	for ; offset+k*slide > ts-size; k-- {
		out = append(out, window.Interval{Start: offset + k*slide, End: offset + k*slide + size})
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
		w := vertex.Sliding(time.Duration(size), time.Duration(slide)).WithOffset(time.Duration(offset))
		if err := w.Validate(); err != nil {
			t.Fatal(err)
		}
		got := spec(w).Assign(ts, nil)
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

// A window closes at exactly end + allowed lateness: one instant below it
// is open, at and above it is closed.
func TestClosedAtLatenessBoundary(t *testing.T) {
	const end = int64(10_000)
	for _, lateness := range []time.Duration{0, 1, 5000} {
		w := vertex.Fixed(10_000).WithAllowedLateness(lateness)
		closeAt := end + int64(lateness)
		if spec(w).ClosedAt(end, closeAt-1) {
			t.Errorf("lateness %v: closed at end+lateness-1", lateness)
		}
		if !spec(w).ClosedAt(end, closeAt) || !spec(w).ClosedAt(end, closeAt+1) {
			t.Errorf("lateness %v: open at end+lateness or above", lateness)
		}
	}
}
