package spans

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestAddMerges: spans added out of order merge with what they overlap or
// touch, and the low mark advances over the spans that reach it.
func TestAddMerges(t *testing.T) {
	var s Set
	steps := []struct {
		add     Span
		changed bool
		want    string
	}{
		{Span{5, 7}, true, "0 [{5 7}]"},
		{Span{10, 12}, true, "0 [{5 7} {10 12}]"},
		{Span{7, 10}, true, "0 [{5 12}]"},    // touches both: one span
		{Span{6, 11}, false, "0 [{5 12}]"},   // inside
		{Span{0, 3}, true, "3 [{5 12}]"},     // reaches the low mark
		{Span{3, 5}, true, "12 []"},          // closes the gap
		{Span{2, 12}, false, "12 []"},        // below low
		{Span{20, 30}, true, "12 [{20 30}]"}, //
		{Span{15, 25}, true, "12 [{15 30}]"}, // overlaps the start
		{Span{14, 40}, true, "12 [{14 40}]"}, // swallows it
		{Span{12, 14}, true, "40 []"},        //
		{Span{41, 41}, false, "40 []"},       // empty
		{Span{50, 60}, true, "40 [{50 60}]"}, //
		{Span{45, 46}, true, "40 [{45 46} {50 60}]"},
	}
	for i, st := range steps {
		if got := s.Add(st.add); got != st.changed {
			t.Fatalf("step %d: Add(%v) reported %v, want %v", i, st.add, got, st.changed)
		}
		if got := fmt.Sprintf("%d %v", s.Low, s.Above); got != st.want {
			t.Fatalf("step %d: after Add(%v) the set is %s, want %s", i, st.add, got, st.want)
		}
	}
}

// TestAgainstModel adds random spans and compares Contains, Covers and Gap
// with a plain set of positions.
func TestAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var s Set
		in := map[int64]bool{}
		for range 30 {
			a := rng.Int64N(100)
			b := a + rng.Int64N(8)
			s.Add(Span{a, b})
			for i := a; i < b; i++ {
				in[i] = true
			}
		}
		for i := int64(0); i < 120; i++ {
			if s.Contains(i) != in[i] {
				t.Fatalf("round %d: Contains(%d) = %v, model %v; set %d %v", round, i, !in[i], in[i], s.Low, s.Above)
			}
			for n := int64(1); n < 6; n++ {
				want := true
				for k := i; k < i+n; k++ {
					want = want && in[k]
				}
				if s.Covers(Span{i, i + n}) != want {
					t.Fatalf("round %d: Covers([%d, %d)) = %v, model %v; set %d %v", round, i, i+n, !want, want, s.Low, s.Above)
				}
			}
			next, stop := s.Gap(i)
			wantNext := i
			for in[wantNext] {
				wantNext++
			}
			wantStop := int64(math.MaxInt64)
			for k := wantNext; k < 200; k++ {
				if in[k] {
					wantStop = k
					break
				}
			}
			if next != wantNext || stop != wantStop {
				t.Fatalf("round %d: Gap(%d) = %d, %d; model %d, %d; set %d %v", round, i, next, stop, wantNext, wantStop, s.Low, s.Above)
			}
		}
		got, err := Decode(s.Append(nil))
		if err != nil || fmt.Sprint(got) != fmt.Sprint(s.Clone()) {
			t.Fatalf("round %d: decoded %v, %v; want %v", round, got, err, s)
		}
	}
}

// TestDecodeRefuses: a stored form of the wrong length, a negative low
// mark, and spans out of order or touching are refused with what is wrong.
func TestDecodeRefuses(t *testing.T) {
	enc := func(v ...int64) []byte {
		s := Set{Low: v[0]}
		for i := 1; i+1 < len(v); i += 2 {
			s.Above = append(s.Above, Span{v[i], v[i+1]})
		}
		return s.Append(nil)
	}
	for _, c := range []struct {
		b    []byte
		want string
	}{
		{nil, "0 bytes"},
		{make([]byte, 12), "12 bytes"},
		{enc(-1), "negative"},
		{enc(5, 5, 7), "[5, 7) at byte 8 does not follow 5"},
		{enc(5, 8, 7), "[8, 7) at byte 8"},
		{enc(5, 8, 10, 10, 12), "[10, 12) at byte 24 does not follow 10"},
	} {
		if _, err := Decode(c.b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Decode(%v): %v, want an error with %q", c.b, err, c.want)
		}
	}
}
