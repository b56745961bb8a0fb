package pipeline

import "github.com/runnel-dev/runnel/internal/metric"

// Histogram is a snapshot of a distribution of durations: Counts[i]
// counts the durations in (Bounds[i-1], Bounds[i]] (not cumulative), and
// the last count, past the end of Bounds, those above every bound.
type Histogram struct {
	Bounds []float64 `json:"bounds"` // upper bounds, seconds, ascending
	Counts []uint64  `json:"counts"` // len(Bounds)+1
	Count  uint64    `json:"count"`  // the sum of Counts
	Sum    float64   `json:"sum"`    // of every duration, seconds
}

// bounds are metric.Bounds in seconds, shared by every snapshot.
var bounds = func() []float64 {
	b := make([]float64, len(metric.Bounds))
	for i, d := range metric.Bounds {
		b[i] = d.Seconds()
	}
	return b
}()

// emptyHistogram is a Histogram without observations.
func emptyHistogram() Histogram {
	return Histogram{Bounds: bounds, Counts: make([]uint64, len(bounds)+1)}
}

// histogramOf turns a snapshot into a Histogram.
func histogramOf(s metric.Snapshot) Histogram {
	return Histogram{Bounds: bounds, Counts: append([]uint64(nil), s.Counts[:]...), Count: s.Count, Sum: s.Sum.Seconds()}
}

// add returns the bucket-wise sum of h and o (both with the same bounds).
func (h Histogram) add(o Histogram) Histogram {
	out := Histogram{Bounds: h.Bounds, Counts: make([]uint64, len(h.Counts)), Count: h.Count + o.Count, Sum: h.Sum + o.Sum}
	for i := range out.Counts {
		out.Counts[i] = h.Counts[i] + o.Counts[i]
	}
	return out
}
