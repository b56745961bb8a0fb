package tracker

import (
	"math"
	"time"
)

// zeroNanos stands for the zero time.Time ("no watermark yet"), whose
// UnixNano is undefined. No representable instant maps to it: toNanos
// clamps real times to minNanos..maxNanos.
const (
	zeroNanos = math.MinInt64
	minNanos  = math.MinInt64 + 1
	maxNanos  = math.MaxInt64
)

var (
	minTime = time.Unix(0, minNanos)
	maxTime = time.Unix(0, maxNanos)
)

// toNanos converts a watermark to the tracker's int64 form.
func toNanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return zeroNanos
	case t.Before(minTime):
		return minNanos
	case t.After(maxTime):
		return maxNanos
	}
	return t.UnixNano()
}

// fromNanos is the inverse of toNanos; it returns UTC times.
func fromNanos(n int64) time.Time {
	if n == zeroNanos {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
