package watermark

import "time"

// timeline is one upstream processor's WMBs for one partition, offsets
// strictly increasing and watermarks non-decreasing from oldest to newest.
// Those invariants make a lookup a binary search and make the watermarks
// it returns monotone in the offset.
//
// A timeline keeps what its reader may still ask for rather than a fixed
// number of the newest entries: a lookup at offset x needs only the newest
// entry below x, and a reader's lookups of a partition never go back, so
// each lookup drops the entries before the one it answered with. A reader
// that lags many writes behind its upstream therefore still finds the WMB
// below each message it reads, which a ring of the newest few lost (the
// message then got no watermark, and the reader's watermark stood still
// until it caught up). max bounds the entries kept for a reader that stops
// asking: beyond it the oldest fall out, as they did from the ring.
type timeline struct {
	entries []WMB // entries[start:] are held
	start   int
	max     int
}

func newTimeline(max int) timeline { return timeline{max: max} }

// held returns the entries held, oldest first.
func (t *timeline) held() []WMB { return t.entries[t.start:] }

// newest returns the newest entry.
func (t *timeline) newest() (WMB, bool) {
	if h := t.held(); len(h) > 0 {
		return h[len(h)-1], true
	}
	return WMB{}, false
}

// put adds w and reports whether it changed the timeline:
//   - a higher offset with a watermark not below the newest is appended
//     (the oldest entry falls out beyond max);
//   - the newest offset again with a higher watermark, or a change of the
//     idle flag, updates the newest entry (idle WMBs repeat the offset of
//     their control message while their watermark advances);
//   - anything else is stale or would move time backwards, and is ignored.
func (t *timeline) put(w WMB) bool {
	cur, ok := t.newest()
	switch {
	case !ok:
		t.entries, t.start = append(t.entries[:0], w), 0
	case w.Watermark.Before(cur.Watermark) || w.Offset < cur.Offset:
		return false
	case w.Offset == cur.Offset:
		if !w.Watermark.After(cur.Watermark) && w.Idle == cur.Idle {
			return false
		}
		t.entries[len(t.entries)-1] = w
	default:
		t.entries = append(t.entries, w)
		if len(t.entries)-t.start > t.max {
			t.drop(t.start + 1)
		}
	}
	return true
}

// lookup returns the watermark of the newest entry whose offset is below
// offset; ok is false when no entry is (the processor has said nothing yet
// about the data before offset, or that part was dropped). The entries
// before the one it answers with are dropped: the reader's next lookups of
// this partition are at offset or above, and never need them.
func (t *timeline) lookup(offset int64) (time.Time, bool) {
	h := t.held()
	lo, hi := 0, len(h) // the first entry at or above offset is h[lo]
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if h[mid].Offset < offset {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return time.Time{}, false
	}
	wm := h[lo-1].Watermark
	t.drop(t.start + lo - 1)
	return wm, true
}

// drop forgets the entries before index i of entries, and moves the rest to
// the front once the dropped ones are half of the slice, so the memory held
// stays proportional to the entries held.
func (t *timeline) drop(i int) {
	if i <= t.start {
		return
	}
	clear(t.entries[t.start:i]) // let go of what the watermarks point to
	t.start = i
	if t.start >= 32 && t.start >= len(t.entries)/2 {
		n := copy(t.entries, t.entries[t.start:])
		t.entries, t.start = t.entries[:n], 0
	}
}
