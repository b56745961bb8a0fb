package metric

import (
	"testing"
	"time"
)

func TestHistogramBuckets(t *testing.T) {
	var h Histogram
	for _, d := range []time.Duration{0, 25 * time.Microsecond, 26 * time.Microsecond, time.Millisecond, 11 * time.Second} {
		h.Observe(d)
	}
	s := h.Snapshot()
	want := map[int]uint64{0: 2, 1: 1, 5: 1, len(Bounds): 1}
	for i, c := range s.Counts {
		if c != want[i] {
			t.Errorf("bucket %d: %d, want %d", i, c, want[i])
		}
	}
	if s.Count != 5 {
		t.Errorf("count %d, want 5", s.Count)
	}
	if wantSum := 51*time.Microsecond + time.Millisecond + 11*time.Second; s.Sum != wantSum {
		t.Errorf("sum %v, want %v", s.Sum, wantSum)
	}
	two := s.Add(s)
	if two.Count != 10 || two.Counts[0] != 4 || two.Sum != 2*s.Sum {
		t.Errorf("Add: %+v", two)
	}
}
