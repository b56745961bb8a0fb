package jetstream

import "sync"

// The usage of a packed stream, in items.
//
// The usage limit counts items (UsageLimit of MaxMsgs), as on an unpacked
// stream, but the offsets of a packed stream are not a count: between two
// offsets lie as many items as the frames between them hold. frameIndex
// keeps the item count of every frame from the lowest commit up to the
// tail, learned from this process's appends (the acknowledgement gives the
// frame's sequence), other processes' announcements (each lists the
// frames it stored), reads, and the refresh (the last frame). A frame
// whose count is not known (an announcement lost) counts as one item: the
// least a frame holds, so the usage is never overstated and a producer is
// never held back by a guess; the stream's own MaxMsgs, which counts
// frames, is then the bound, and it is never below the usage limit in
// items since a frame holds at least one.
type frameIndex struct {
	mu     sync.Mutex
	base   uint64   // sequence of counts[0]
	counts []uint32 // items of the frames from base; 0: not known yet
	sum    int64    // items of counts, a frame not known as 1
}

// learn records that the frame at seq holds n items.
func (x *frameIndex) learn(seq uint64, n int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case x.counts == nil:
		x.base = seq
	case seq < x.base:
		// Learned late (another process's announcement arriving after
		// this process's next append): used forgets it again if it lies
		// below the lowest commit.
		x.growDownLocked(seq)
	}
	x.extendLocked(seq)
	if c := &x.counts[seq-x.base]; *c == 0 {
		*c = uint32(n)
		x.sum += int64(n) - 1
	}
}

// extendLocked makes counts reach seq, counting the new frames as one
// item each until they are known.
func (x *frameIndex) extendLocked(seq uint64) {
	for top := x.base + uint64(len(x.counts)); top <= seq; top++ {
		x.counts = append(x.counts, 0)
		x.sum++
	}
}

// growDownLocked makes counts start at seq, below base, counting the new
// frames as one item each until they are known.
func (x *frameIndex) growDownLocked(seq uint64) {
	grown := make([]uint32, x.base-seq, x.base-seq+uint64(len(x.counts)))
	x.sum += int64(len(grown))
	x.counts, x.base = append(grown, x.counts...), seq
}

// used returns the items in [low, tail) of a stream whose offsets shift
// by shift, forgetting the frames below low's.
func (x *frameIndex) used(low, tail int64, shift uint) int64 {
	if tail <= low {
		return 0
	}
	lowSeq, lowIdx := split(low, shift)
	lastSeq, _ := split(tail-1, shift)
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case x.counts == nil:
		x.base = lowSeq
	case lowSeq < x.base:
		// A group that starts below every commit (a new one, at the head):
		// the frames between are counted again, unknown until read.
		x.growDownLocked(lowSeq)
	default:
		for x.base < lowSeq && len(x.counts) > 0 {
			x.sum -= max(1, int64(x.counts[0]))
			x.counts, x.base = x.counts[1:], x.base+1
		}
		if len(x.counts) == 0 {
			x.counts, x.base = x.counts[:0:0], lowSeq
		}
	}
	x.extendLocked(lastSeq)
	used := x.sum
	if c := int64(x.counts[0]); c > 0 {
		// The items of low's frame below low are committed.
		used -= min(int64(lowIdx), c-1)
	}
	// Frames past the tail (learned from an acknowledgement before the
	// tail moved) are not used yet.
	for s := lastSeq + 1; s < x.base+uint64(len(x.counts)); s++ {
		used -= max(1, int64(x.counts[s-x.base]))
	}
	return max(used, 1)
}

// count returns the items in [from, to) as far as the frames are known
// (one for a frame not known), without forgetting any.
func (x *frameIndex) count(from, to int64, shift uint) int64 {
	if to <= from {
		return 0
	}
	fromSeq, fromIdx := split(from, shift)
	lastSeq, _ := split(to-1, shift)
	_, toIdx := split(to, shift)
	x.mu.Lock()
	defer x.mu.Unlock()
	known := func(seq uint64) int64 {
		if seq >= x.base && seq < x.base+uint64(len(x.counts)) {
			if c := x.counts[seq-x.base]; c > 0 {
				return int64(c)
			}
		}
		return 1
	}
	var n int64
	for s := fromSeq; s <= lastSeq; s++ {
		c := known(s)
		lo, hi := int64(0), c
		if s == fromSeq {
			lo = min(int64(fromIdx), c)
		}
		if s == lastSeq && to < join(s, int(c), shift) {
			hi = min(int64(toIdx), c)
		}
		n += max(hi-lo, 0)
	}
	return max(n, 1)
}
