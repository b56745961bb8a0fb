// Package spans keeps a set of int64 positions as the resumable sources
// record what was acknowledged: every position below a low mark, and the
// spans above it acknowledged out of order (replicas, or batches
// acknowledged as they complete, finish out of read order). The generator
// (sequence numbers) and vertex/file (byte offsets of lines) keep their
// positions in it, so the merging and the stored form have one
// implementation.
//
// The stored form is little-endian
//
//	low u64 | first u64, end u64 (a span above low) ...
//
// spans sorted, apart from each other and from low (a span that touched
// low would have been merged into it).
//
// It is internal: no user imports it.
package spans

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Span is the positions [First, End).
type Span struct{ First, End int64 }

// Set is every position below Low and those of Above: spans above Low,
// sorted, merged, none touching Low or another. The zero Set is empty.
type Set struct {
	Low   int64
	Above []Span
}

// Add puts s in the set and reports whether that changed it.
func (t *Set) Add(s Span) bool {
	s.First = max(s.First, t.Low)
	if s.End <= s.First {
		return false // in the set already
	}
	// Merge s with every span it overlaps or touches.
	i, _ := slices.BinarySearchFunc(t.Above, s.First, func(a Span, at int64) int {
		if a.End < at {
			return -1
		}
		return 1
	})
	j := i
	for j < len(t.Above) && t.Above[j].First <= s.End {
		s.First, s.End = min(s.First, t.Above[j].First), max(s.End, t.Above[j].End)
		j++
	}
	if j == i+1 && t.Above[i] == s {
		return false // within one span of the set already
	}
	t.Above = slices.Replace(t.Above, i, j, s)
	if t.Above[0].First == t.Low {
		t.Low = t.Above[0].End
		t.Above = slices.Delete(t.Above, 0, 1)
	}
	return true
}

// Contains reports whether position i is in the set.
func (t *Set) Contains(i int64) bool {
	if i < t.Low {
		return true
	}
	k := t.find(i)
	return k < len(t.Above) && t.Above[k].First <= i
}

// Covers reports whether every position of s is in the set.
func (t *Set) Covers(s Span) bool {
	if s.End <= t.Low {
		return true
	}
	if s.First < t.Low {
		return false // Above never touches Low: a gap lies at Low
	}
	k := t.find(s.First)
	return k < len(t.Above) && t.Above[k].First <= s.First && s.End <= t.Above[k].End
}

// find is the first span of Above that ends after i.
func (t *Set) find(i int64) int {
	k, _ := slices.BinarySearchFunc(t.Above, i, func(a Span, at int64) int {
		if a.End <= at {
			return -1
		}
		return 1
	})
	return k
}

// Gap returns the first position at or after cur that is not in the set,
// and where the next span of the set after it starts (math.MaxInt64:
// none): a reader resumed from the set reads [next, stop) and then steps
// over the span at stop.
func (t *Set) Gap(cur int64) (next, stop int64) {
	if cur < t.Low {
		cur = t.Low
	}
	k := t.find(cur)
	if k < len(t.Above) && t.Above[k].First <= cur {
		cur, k = t.Above[k].End, k+1
	}
	if k == len(t.Above) {
		return cur, math.MaxInt64
	}
	return cur, t.Above[k].First
}

// Clone returns a copy that shares nothing with t.
func (t *Set) Clone() Set { return Set{Low: t.Low, Above: slices.Clone(t.Above)} }

// Append appends the stored form of t to b.
func (t *Set) Append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(t.Low))
	for _, s := range t.Above {
		b = binary.LittleEndian.AppendUint64(b, uint64(s.First))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.End))
	}
	return b
}

// Decode checks and decodes a stored form (8 bytes: a set without spans
// above its low mark). Its errors say what is wrong, with no package
// prefix: the caller adds its own.
func Decode(b []byte) (Set, error) {
	if len(b) < 8 || (len(b)-8)%16 != 0 {
		return Set{}, fmt.Errorf("stored position has %d bytes, want 8 plus 16 per span", len(b))
	}
	u := func(i int) int64 { return int64(binary.LittleEndian.Uint64(b[i:])) }
	t := Set{Low: u(0)}
	if t.Low < 0 {
		return Set{}, fmt.Errorf("stored position %d is negative", t.Low)
	}
	prev := t.Low
	for i := 8; i < len(b); i += 16 {
		s := Span{u(i), u(i + 8)}
		if s.First <= prev || s.End <= s.First {
			return Set{}, fmt.Errorf("stored span [%d, %d) at byte %d does not follow %d", s.First, s.End, i, prev)
		}
		t.Above = append(t.Above, s)
		prev = s.End
	}
	return t, nil
}
