package isb

// routes says where each item of a batch goes: item i to partition idx[i],
// or, when idx is nil, round-robin: item i to partition (rr+i) mod n.
// Round-robin batches need no per-item table.
type routes struct {
	idx []int32
	rr  int
}

// batchScratch is the reusable memory of one ProduceBatch call: the
// partition of every item and the items regrouped by partition. Topics pool
// them, so routing a batch per item allocates nothing once warm.
type batchScratch[T any] struct {
	idx    []int32 // partition of each item (keyed routers only)
	starts []int   // starts[p]..starts[p+1] is partition p's run in out
	pos    []int   // next free slot of each partition in out
	out    []T     // items grouped by partition, in batch order within each
}

func (t *Topic[T]) getScratch() *batchScratch[T] { return t.scratch.Get().(*batchScratch[T]) }

func (t *Topic[T]) putScratch(s *batchScratch[T]) { t.scratch.Put(s) }

// index returns s.idx sized for n items.
func (s *batchScratch[T]) index(n int) []int32 {
	if cap(s.idx) < n {
		s.idx = make([]int32, n)
	}
	return s.idx[:n]
}

// group regroups items by partition, keeping the batch order within each
// partition, and returns them with the run boundaries: partition p's items
// are out[starts[p]:starts[p+1]]. out is s.out, or items itself when they
// all go to one partition (a caller that routes each batch to a single
// partition pays for no copy).
func (s *batchScratch[T]) group(items []T, r routes, n int) (out []T, starts []int) {
	if cap(s.starts) < n+1 {
		s.starts = make([]int, n+1)
		s.pos = make([]int, n)
	}
	if cap(s.out) < len(items) {
		s.out = make([]T, len(items))
	}
	starts = s.starts[:n+1]
	if r.idx == nil {
		out = s.out[:len(items)]
		// Round-robin: partition p takes every n-th item from the first
		// one routed to it; a strided copy, no table.
		k := 0
		for p := range n {
			starts[p] = k
			for j := (p - r.rr + n) % n; j < len(items); j += n {
				out[k] = items[j]
				k++
			}
		}
		starts[n] = k
		return out, starts
	}
	// Keyed: a stable counting sort on the partition table.
	pos := s.pos[:n]
	clear(starts)
	for _, p := range r.idx {
		starts[p+1]++
	}
	for p := range n {
		starts[p+1] += starts[p]
	}
	if p := r.idx[0]; starts[p+1]-starts[p] == len(items) {
		return items, starts
	}
	copy(pos, starts[:n])
	out = s.out[:len(items)]
	for i, p := range r.idx {
		out[pos[p]] = items[i]
		pos[p]++
	}
	return out, starts
}
