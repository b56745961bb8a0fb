package groupset

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestSet(t *testing.T) {
	var s Set
	if got := s.Sorted(); got == nil || len(got) != 0 {
		t.Fatalf("empty set: Sorted() = %#v, want a non-nil empty slice", got)
	}
	for _, g := range []string{"b", "a", "c", "a", "b"} {
		s.Add(g)
	}
	got := s.Sorted()
	if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("Sorted() = %v, want %v", got, want)
	}
	s.Remove("b")
	s.Remove("never") // removing a group it does not hold changes nothing
	if got := s.Sorted(); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("after Remove(b): Sorted() = %v, want [a c]", got)
	}
	s.Add("b")
	got[0] = "changed"
	if again := s.Sorted(); again[0] != "a" {
		t.Fatalf("Sorted() shares its slice with the set: %v", again)
	}
}

// Run with -race: Add and Sorted run from many partitions at once.
func TestSetConcurrent(t *testing.T) {
	var s Set
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				s.Add(fmt.Sprintf("g%02d", (w*50+i)%100))
				_ = s.Sorted()
			}
		})
	}
	wg.Wait()
	got := s.Sorted()
	if len(got) != 100 || got[0] != "g00" || got[99] != "g99" || !slices.IsSorted(got) {
		t.Fatalf("got %d groups %v...%v, want g00..g99 sorted", len(got), got[:1], got[len(got)-1:])
	}
}
