package watermark

import (
	"slices"
	"strings"
	"testing"
	"time"
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

// Accept (not strict) ignores the processors it refuses: another run's in
// a store that outlives runs never moves this run's watermark.
func TestFetcherAccept(t *testing.T) {
	clock := newFakeClock()
	f, err := NewFetcher(NewMemStore(), FetcherConfig{
		Edges: []string{"e"}, Partitions: []int{0}, HeartbeatTimeout: 10 * time.Second, Clock: clock.Now,
		Accept: func(p string) bool { return strings.HasSuffix(p, "/run2") },
	})
	if err != nil {
		t.Fatal(err)
	}
	beat(f, 0, "a-0/run1", clock.Now())
	feed(t, f, 0, "a-0/run1", WMB{Offset: 5, Watermark: Max}) // the old run's end
	wantWM(t, "Fetch with only the old run", f.Fetch(0, 10), time.Time{})
	beat(f, 0, "a-0/run2", clock.Now())
	feed(t, f, 0, "a-0/run2", WMB{Offset: 8, Watermark: ms(70)})
	wantWM(t, "Fetch with this run", f.Fetch(0, 10), ms(70))
	if got := f.Ended(0); got != nil {
		t.Fatalf("Ended = %v: the old run's end counts", got)
	}
	if got := f.Live("e"); !slices.Equal(got, []string{"a-0/run2"}) {
		t.Fatalf("Live = %v, want this run's processor only", got)
	}
}
