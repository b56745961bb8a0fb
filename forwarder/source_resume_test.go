package forwarder

import (
	"fmt"
	"testing"
)

// TestSourceResumeAnchors: the anchors are the lowest tails seen when a
// batch still in flight was registered, and the start's until the found
// messages are acknowledged; a batch released no longer holds them.
func TestSourceResumeAnchors(t *testing.T) {
	tails := []int64{10, 20, 30} // edge e1: 2 partitions, e2: 1
	res := &SourceResume[int]{Parts: map[string]int{"e1": 2, "e2": 1}, Order: []string{"e1", "e2"},
		Tails: func(dst []int64) { copy(dst, tails) }, Start: []int64{5, 25, 30}}
	check := func(when string, want ...int64) {
		t.Helper()
		if got := res.Anchors(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: anchors %v, want %v", when, got, want)
		}
	}
	check("before the start", 5, 20, 30)
	res.started = true
	check("started", 10, 20, 30)
	a, b, c := &sourceBatch[int]{}, &sourceBatch[int]{}, &sourceBatch[int]{}
	res.register(0, a) // at 10, 20, 30
	tails = []int64{15, 22, 31}
	res.register(1, b) // at 15, 22, 31
	res.register(0, c)
	tails = []int64{40, 40, 40}
	check("three in flight", 10, 20, 30)
	res.release(0, a)
	check("a acknowledged", 15, 22, 31)
	res.release(1, b)
	check("b acknowledged", 15, 22, 31) // c, registered at the same tails
	res.release(0, c)
	check("none in flight", 40, 40, 40)
}
