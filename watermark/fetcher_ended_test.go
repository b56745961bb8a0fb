package watermark

import (
	"slices"
	"testing"
)

// Ended lists, per partition, the processors whose newest WMB there is
// final, with the offset of their end, sorted by name: over every edge,
// and only for partitions the reader reads.
func TestFetcherEnded(t *testing.T) {
	clock := newFakeClock()
	f := newTestFetcher(t, clock, []string{"e1", "e2"}, []int{0, 1})
	beat(f, 0, "b", clock.Now())
	beat(f, 0, "a", clock.Now())
	beat(f, 1, "c", clock.Now())
	feed(t, f, 0, "a", WMB{Partition: 0, Offset: 10, Watermark: ms(100)})
	feed(t, f, 0, "b", WMB{Partition: 0, Offset: 12, Watermark: Max})
	feed(t, f, 1, "c", WMB{Partition: 0, Offset: 7, Watermark: Max})
	feed(t, f, 0, "a", WMB{Partition: 1, Offset: 30, Watermark: Max})
	want0 := []EndedProcessor{{"b", 12}, {"c", 7}}
	if got := f.Ended(0); !slices.Equal(got, want0) {
		t.Fatalf("Ended(0) = %v, want %v", got, want0)
	}
	if got, want := f.Ended(1), []EndedProcessor{{"a", 30}}; !slices.Equal(got, want) {
		t.Fatalf("Ended(1) = %v, want %v", got, want)
	}
	// a ends partition 0 too; a partition not read has none.
	feed(t, f, 0, "a", WMB{Partition: 0, Offset: 11, Watermark: Max})
	if got, want := f.Ended(0), []EndedProcessor{{"a", 11}, {"b", 12}, {"c", 7}}; !slices.Equal(got, want) {
		t.Fatalf("Ended(0) after a's end = %v, want %v", got, want)
	}
	if got := f.Ended(5); got != nil {
		t.Fatalf("Ended(5) = %v, want none", got)
	}
}
