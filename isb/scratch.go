package isb

// batchScratch is the reusable memory of one ProduceBatch call: the
// partition of every item and the items regrouped by partition. Topics pool
// them, so routing a batch per item allocates nothing once warm.
type batchScratch[T any] struct {
	idx    []int32 // partition of each item
	starts []int   // starts[p]..starts[p+1] is partition p's run in out
	pos    []int   // next free slot of each partition in out
	out    []T     // items grouped by partition, in batch order within each
}

func (t *Topic[T]) getScratch(n int) *batchScratch[T] {
	s := t.scratch.Get().(*batchScratch[T])
	if cap(s.idx) < n {
		s.idx = make([]int32, n)
	}
	s.idx = s.idx[:n]
	return s
}

func (t *Topic[T]) putScratch(s *batchScratch[T]) { t.scratch.Put(s) }

// group regroups items by partition (a stable counting sort on idx) into
// s.out and returns the run boundaries: partition p's items are
// s.out[starts[p]:starts[p+1]].
func (s *batchScratch[T]) group(items []T, idx []int32, n int) []int {
	if cap(s.starts) < n+1 {
		s.starts = make([]int, n+1)
		s.pos = make([]int, n)
	}
	starts, pos := s.starts[:n+1], s.pos[:n]
	clear(starts)
	for _, p := range idx {
		starts[p+1]++
	}
	for p := range n {
		starts[p+1] += starts[p]
	}
	copy(pos, starts[:n])
	if cap(s.out) < len(items) {
		s.out = make([]T, len(items))
	}
	out := s.out[:len(items)]
	for i, p := range idx {
		out[pos[p]] = items[i]
		pos[p]++
	}
	return starts
}
