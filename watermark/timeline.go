package watermark

import "time"

// timeline is one upstream processor's recent WMBs for one partition: a ring
// of the newest n, offsets strictly increasing and watermarks non-decreasing
// from oldest to newest. Those invariants make a lookup a short scan from the
// newest entry and make the watermarks it returns monotone in the offset.
type timeline struct {
	ring []WMB
	head int // index of the newest entry
	n    int // entries held
}

func newTimeline(capacity int) timeline { return timeline{ring: make([]WMB, capacity)} }

// newest returns the newest entry.
func (t *timeline) newest() (WMB, bool) {
	if t.n == 0 {
		return WMB{}, false
	}
	return t.ring[t.head], true
}

// put adds w and reports whether it changed the timeline:
//   - a higher offset with a watermark not below the newest is appended
//     (the oldest entry falls out when the ring is full);
//   - the newest offset again with a higher watermark, or a change of the
//     idle flag, updates the newest entry (idle WMBs repeat the offset of
//     their control message while their watermark advances);
//   - anything else is stale or would move time backwards, and is ignored.
func (t *timeline) put(w WMB) bool {
	cur, ok := t.newest()
	switch {
	case !ok:
		t.ring[t.head], t.n = w, 1
	case w.Watermark.Before(cur.Watermark) || w.Offset < cur.Offset:
		return false
	case w.Offset == cur.Offset:
		if !w.Watermark.After(cur.Watermark) && w.Idle == cur.Idle {
			return false
		}
		t.ring[t.head] = w
	default:
		t.head = (t.head + 1) % len(t.ring)
		t.ring[t.head] = w
		t.n = min(t.n+1, len(t.ring))
	}
	return true
}

// lookup returns the watermark of the newest entry whose offset is below
// offset; ok is false when no entry is (the processor has said nothing yet
// about the data before offset, or that part already left the ring).
func (t *timeline) lookup(offset int64) (time.Time, bool) {
	for i := range t.n {
		e := &t.ring[(t.head-i+len(t.ring))%len(t.ring)]
		if e.Offset < offset {
			return e.Watermark, true
		}
	}
	return time.Time{}, false
}
