package vertex

import (
	"math"
	"strconv"
	"testing"
)

// A batch's IDs are the decimal numbers, as strconv writes them, across
// changes of width and sign, and the largest and smallest int64.
func TestBatchIDs(t *testing.T) {
	for _, run := range [][2]int64{{0, 500}, {7, 10}, {95, 20}, {999_990, 30}, {-12, 25}, {math.MaxInt64 - 3, 4}, {math.MinInt64, 3}, {5, 0}} {
		ids := batchIDs(run[0], int(run[1]))
		for k := range run[1] {
			want := strconv.FormatInt(run[0]+k, 10)
			if got := ids.next(); got != want {
				t.Fatalf("run from %d: ID %d is %q, want %q", run[0], k, got, want)
			}
		}
	}
	if testing.AllocsPerRun(10, func() {
		ids := batchIDs(1000, 500)
		for range 500 {
			_ = ids.next()
		}
	}) != 1 {
		t.Error("a batch's IDs take more than one allocation")
	}
}
