package forwarder

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/keys"
	"github.com/runnel-dev/runnel/internal/window"
	"github.com/runnel-dev/runnel/vertex"
)

// idsOps keeps the IDs of a window's messages, so a test sees exactly
// what each window holds (and merges concatenate in order).
var idsOps = reduceOps[int, []string]{
	create: func() []string { return nil },
	add:    func(s []string, m vertex.Message[int]) []string { return append(s, m.ID) },
	merge:  func(a, b []string) []string { return append(a, b...) },
}

// closed is one closed window as closeUpTo emitted it.
type closed struct {
	iv  window.Interval
	key string
	ids string
}

func (c closed) String() string {
	return fmt.Sprintf("%s[%d,%d)=%s", c.key, c.iv.Start, c.iv.End, c.ids)
}

// windowHarness drives a window set as a reduce shard does.
type windowHarness struct {
	t   *testing.T
	set windowSet[int, []string]
}

func newHarness(t *testing.T, w vertex.Windowing) *windowHarness {
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	return &windowHarness{t: t, set: newWindowSet(w, idsOps, func() uint64 { return 1 })}
}

// add adds message id of key at event time et (ns) under watermark wm.
func (h *windowHarness) add(id, key string, et, wm int64) bool {
	m := vertex.Message[int]{ID: id, Keys: []string{key}, EventTime: time.Unix(0, et)}
	return h.set.add(&m, keys.Append(nil, m.Keys), wm)
}

func (h *windowHarness) close(wm int64) []closed {
	var out []closed
	err := h.set.closeUpTo(wm, func(iv window.Interval, p *pane[[]string]) error {
		out = append(out, closed{iv: iv, key: p.keys[0], ids: strings.Join(p.state, ",")})
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

func (h *windowHarness) expect(got []closed, want ...string) {
	h.t.Helper()
	var s []string
	for _, c := range got {
		s = append(s, c.String())
	}
	if !slices.Equal(s, want) {
		h.t.Errorf("closed %v, want %v", s, want)
	}
}

// Sessions of one key merge when a message overlaps or touches them, also
// a message behind the watermark (inside the lateness) that bridges two
// open sessions; other keys are untouched; a closed session is never
// reopened: a message for it is late.
func TestSessionMerging(t *testing.T) {
	const gap = 10
	h := newHarness(t, vertex.Session(gap).WithAllowedLateness(100))
	for _, m := range []struct {
		id, key string
		et      int64
	}{{"a1", "a", 0}, {"a2", "a", 5}, {"a3", "a", 30}, {"b1", "b", 12}} {
		if !h.add(m.id, m.key, m.et, 0) {
			t.Fatalf("%s refused", m.id)
		}
	}
	// a: [0,15) and [30,40); b: [12,22). Nothing closes before end+100.
	h.expect(h.close(114))
	if got := h.set.size(); got != 3 {
		t.Errorf("%d open panes, want 3", got)
	}
	// The watermark is past both of a's sessions (45 > 40), inside the
	// lateness: a message at 20 gives [20,30), which touches [30,40) and
	// merges into [20,40); then a message at 14 gives [14,24), which
	// bridges [0,15) and [20,40) into [0,40).
	if !h.add("a4", "a", 20, 45) || !h.add("a5", "a", 14, 45) {
		t.Fatal("messages inside the lateness refused")
	}
	if got := h.set.size(); got != 2 {
		t.Errorf("%d open panes after the bridge, want 2 (a's one session, b's)", got)
	}
	if end, _ := h.set.oldestEnd(); end != 22 {
		t.Errorf("oldest end %d, want 22 (b)", end)
	}
	h.expect(h.close(121))
	h.expect(h.close(122), "b[12,22)=b1")
	h.expect(h.close(139))
	h.expect(h.close(140), "a[0,40)=a1,a2,a3,a4,a5")
	// a's session closed at 140 and is gone: a message inside its range
	// makes a proto-session of its own, late when that one is closed too
	// ([29,39) at 140), accepted when not ([31,41)): a new session, never
	// the old one reopened.
	if h.add("a6", "a", 29, 140) {
		t.Error("a message for a closed session accepted")
	}
	if h.add("a7", "a", 30, 140) {
		t.Error("a message whose session ends at 40 accepted at watermark 140 (lateness 100: closed)")
	}
	if !h.add("a8", "a", 31, 140) {
		t.Error("a message whose session ends at 41 refused at watermark 140 (open until 141)")
	}
	h.expect(h.close(140))
	h.expect(h.close(141), "a[31,41)=a8")
	if _, ok := h.set.oldestEnd(); ok || h.set.size() != 0 {
		t.Errorf("windows left open: %d", h.set.size())
	}
}

// Touching sessions merge (Flink's intersects: [0,10) and [10,20) are one
// session), and a bridge across three sessions merges all three in order.
func TestSessionMergeTouchingAndMany(t *testing.T) {
	h := newHarness(t, vertex.Session(10))
	for _, m := range []struct {
		id string
		et int64
	}{{"x", 0}, {"y", 30}, {"z", 60}, {"t", 10}} {
		h.add(m.id, "k", m.et, 0)
	}
	if h.set.size() != 3 {
		t.Fatalf("%d sessions, want 3 ([0,20) after the touch, [30,40), [60,70))", h.set.size())
	}
	// [25,35) overlaps [30,40): they merge into [25,40).
	h.add("u", "k", 25, 0)
	h.add("v", "k", 20, 0) // [20,30) touches [0,20) and overlaps [25,40): one session [0,40)
	h.add("w", "k", 50, 0) // [50,60) touches [60,70)
	h.add("s", "k", 40, 0) // [40,50) bridges [0,40) and [50,70)
	h.expect(h.close(1000), "k[0,70)=x,t,y,u,v,z,w,s")
}

// At the exact boundary: a fixed window [0,10) with lateness 5 accepts a
// message at watermark 14 (one instant below end + lateness) and refuses
// it at 15 and above; a sliding message is added only to its open windows,
// and is late only when all of them are closed.
func TestLatenessBoundary(t *testing.T) {
	h := newHarness(t, vertex.Fixed(10).WithAllowedLateness(5))
	if !h.add("in", "k", 3, 14) {
		t.Error("refused at watermark end+lateness-1")
	}
	if h.add("at", "k", 3, 15) {
		t.Error("accepted at watermark end+lateness")
	}
	if h.add("above", "k", 3, 16) {
		t.Error("accepted above end+lateness")
	}
	h.expect(h.close(14))
	h.expect(h.close(15), "k[0,10)=in")

	s := newHarness(t, vertex.Sliding(10, 5))
	// Event time 7 belongs to [5,15) and [0,10). At watermark 10, [0,10)
	// is closed: only [5,15) takes it.
	if !s.add("m", "k", 7, 10) {
		t.Fatal("refused with one window open")
	}
	if s.add("late", "k", 7, 15) {
		t.Error("accepted with both windows closed")
	}
	s.expect(s.close(100), "k[5,15)=m")
}

// Windows close in ascending end order across keys, each window once.
func TestAlignedCloseOrder(t *testing.T) {
	h := newHarness(t, vertex.Sliding(20, 10))
	h.add("a", "x", 5, 0)               // [0,20) [-10,10)
	h.add("b", "y", 15, 0)              // [10,30) [0,20)
	got := byEndThenKey(t, h.close(20)) // keys of one window come in map order
	h.expect(got, "x[-10,10)=a", "x[0,20)=a", "y[0,20)=b")
	h.expect(h.close(20))
	h.expect(h.close(30), "y[10,30)=b")
}

// naiveSessions is the session semantics written plainly, with no heap
// and no stale entries: the model the session set is checked against.
type naiveSessions struct {
	gap, lateness int64
	open          map[string][]*closed // per key, unordered
}

func (n *naiveSessions) add(id, key string, t, wm int64) bool {
	iv := window.Interval{Start: t, End: t + n.gap}
	var keep []*closed
	merged := &closed{iv: iv, key: key, ids: id}
	var hit []*closed
	for _, s := range n.open[key] {
		// A session closed at wm is due, not yet emitted: it takes
		// nothing more (issue 18), it is emitted as it is.
		if wm < s.iv.End+n.lateness && s.iv.Start <= iv.End && iv.Start <= s.iv.End {
			hit = append(hit, s)
		} else {
			keep = append(keep, s)
		}
	}
	if len(hit) == 0 && wm >= iv.End+n.lateness {
		return false
	}
	if len(hit) > 0 {
		// Merge in start order, the new message last: the order the
		// session set keeps (the oldest session's messages first).
		slices.SortFunc(hit, func(a, b *closed) int { return cmp.Compare(a.iv.Start, b.iv.Start) })
		var ids []string
		merged = &closed{iv: hit[0].iv, key: key}
		for _, s := range hit {
			merged.iv.Start = min(merged.iv.Start, s.iv.Start)
			merged.iv.End = max(merged.iv.End, s.iv.End)
			ids = append(ids, s.ids)
		}
		merged.iv.Start = min(merged.iv.Start, iv.Start)
		merged.iv.End = max(merged.iv.End, iv.End)
		merged.ids = strings.Join(append(ids, id), ",")
	}
	n.open[key] = append(keep, merged)
	return true
}

// close returns the sessions closed at wm in end order (then key).
func (n *naiveSessions) close(wm int64) []closed {
	var out []closed
	for key, list := range n.open {
		var keep []*closed
		for _, s := range list {
			if wm >= s.iv.End+n.lateness {
				out = append(out, *s)
			} else {
				keep = append(keep, s)
			}
		}
		n.open[key] = keep
	}
	slices.SortFunc(out, func(a, b closed) int {
		return cmp.Or(cmp.Compare(a.iv.End, b.iv.End), cmp.Compare(a.iv.Start, b.iv.Start), strings.Compare(a.key, b.key))
	})
	return out
}

// The session set agrees with the plain model on random keyed streams,
// out of order, with a watermark that advances and a lateness: the same
// messages accepted, the same sessions closed with the same contents. The
// sessions are closed only now and then, so messages often arrive at a
// watermark that closed sessions still in the set: those are never merged.
func TestSessionSetAgainstModel(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		gap, lateness := 1+r.Int64N(20), r.Int64N(30)
		h := newHarness(t, vertex.Session(time.Duration(gap)).WithAllowedLateness(time.Duration(lateness)))
		model := &naiveSessions{gap: gap, lateness: lateness, open: map[string][]*closed{}}
		var wm int64
		for i := range 300 {
			wm += r.Int64N(3)
			et := wm - 40 + r.Int64N(80)
			key := string(rune('a' + r.IntN(3)))
			id := fmt.Sprint(i)
			if got, want := h.add(id, key, et, wm), model.add(id, key, et, wm); got != want {
				t.Fatalf("seed %d: message %d (%s at %d, wm %d): accepted %v, model %v", seed, i, key, et, wm, got, want)
			}
			if r.IntN(4) == 0 {
				got, want := byEndThenKey(t, h.close(wm)), model.close(wm)
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d at wm %d: closed %v, model %v", seed, wm, got, want)
				}
			}
		}
		got, want := byEndThenKey(t, h.close(math.MaxInt64/2)), model.close(math.MaxInt64/2)
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d at the end: closed %v, model %v", seed, got, want)
		}
	}
}

// byEndThenKey checks that closed windows came in ascending end order and
// sorts those of one end by start, then key (their order among themselves
// is the heap's and the map's).
func byEndThenKey(t *testing.T, got []closed) []closed {
	t.Helper()
	for i := 1; i < len(got); i++ {
		if got[i].iv.End < got[i-1].iv.End {
			t.Fatalf("closed out of end order: %v", got)
		}
	}
	slices.SortFunc(got, func(a, b closed) int {
		return cmp.Or(cmp.Compare(a.iv.End, b.iv.End), cmp.Compare(a.iv.Start, b.iv.Start), strings.Compare(a.key, b.key))
	})
	return got
}

// A session closed at the watermark a message comes with takes nothing
// more, also before closeUpTo emitted it (issue 18): the message is late
// when its own session is closed too, else it opens a session of its own
// beside the closed one, which is emitted as it was.
func TestSessionSetNeverMergesClosed(t *testing.T) {
	h := newHarness(t, vertex.Session(10).WithAllowedLateness(5))
	if !h.add("a1", "a", 0, 0) { // [0,10), closes at 15
		t.Fatal("a1 refused")
	}
	if h.add("a2", "a", 3, 20) { // [3,13) closes at 18: late; [0,10) closed at 20
		t.Error("a message whose session and the session it touches are closed was accepted")
	}
	if !h.add("a3", "a", 8, 15) { // [8,18) is open at 15, [0,10) is closed
		t.Fatal("a3 refused")
	}
	h.expect(h.close(15), "a[0,10)=a1")
	h.expect(h.close(22))
	h.expect(h.close(23), "a[8,18)=a3")
}
