package forwarder

import (
	"container/heap"
	"math"
	"slices"
	"time"

	"github.com/runnel-dev/runnel/internal/keys"
	"github.com/runnel-dev/runnel/internal/window"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/wal"
)

// This file keeps the open windows of one reduce shard. State changes only
// in add (a message and the windows its event time is assigned to), so the
// reduce WAL can rebuild every open window by replaying the messages it
// logged through add in log order: the result is the same windows with the
// same accumulators. closeUpTo is the only way out: in ascending end order,
// each window once.

// pane is the state of one window for one key.
type pane[S any] struct {
	keys  []string // the result's keys: a session's first message's; an aligned window's decoded from its map key
	state S
	// ids are the ids a session's messages were logged under in the reduce
	// WAL: its own and those of the sessions merged into it (nil for
	// aligned windows, which the WAL names by their bounds).
	ids []uint64
}

// windowSet is the open windows of one shard of a reduce replica.
type windowSet[In, S any] interface {
	// add adds m, whose keys encode as key (internal/keys: distinct key
	// lists, distinct keys; key is only read during the call), to every
	// window of m that is open at watermark wm, and reports false when
	// there is none: every window of m is closed, m is late and was not
	// added. No window closed at wm ever takes m: a fixed or sliding window
	// closed at wm is skipped, a session closed at wm is neither merged nor
	// extended (the reduce closes them before it adds a message whose
	// watermark closes them, so the set holds none then).
	add(m *vertex.Message[In], key []byte, wm int64) bool
	// closeUpTo removes every window closed at wm (end + lateness <= wm),
	// in ascending end order, calling emit with each key's pane.
	closeUpTo(wm int64, emit func(iv window.Interval, p *pane[S]) error) error
	// oldestEnd is the smallest end of an open window.
	oldestEnd() (int64, bool)
	// size is the number of open panes (window and key pairs).
	size() int
	// added appends to dst the windows the last add that returned true
	// put its message in, as the reduce WAL names them.
	added(dst []wal.Window) []wal.Window
	// replay adds m, whose routing key is key, to exactly the windows ws a
	// WAL entry logged it under (never late: the log holds open windows
	// only), merging sessions as add does.
	replay(m *vertex.Message[In], key []byte, ws []wal.Window)
}

// closedWindows appends to dst the WAL names of the window iv of pane p,
// which was just closed: its bounds, or, for a session, every id its
// messages were logged under.
func closedWindows[S any](dst []wal.Window, iv window.Interval, p *pane[S]) []wal.Window {
	w := wal.Window{Start: time.Unix(0, iv.Start), End: time.Unix(0, iv.End)}
	if len(p.ids) == 0 {
		return append(dst, w)
	}
	for _, id := range p.ids {
		w.Session = id
		dst = append(dst, w)
	}
	return dst
}

// reduceOps is a reduce function as a window set runs it.
type reduceOps[In, S any] struct {
	create func() S
	add    func(S, vertex.Message[In]) S
	merge  func(a, b S) S
}

// newWindowSet returns the window set of w's kind. newID gives each new
// session the id the reduce WAL names it by (unique, never 0).
func newWindowSet[In, S any](w vertex.Windowing, ops reduceOps[In, S], newID func() uint64) windowSet[In, S] {
	if w.Kind == vertex.SessionWindows {
		return &sessionSet[In, S]{w: w, ops: ops, byKey: map[string][]*session[S]{}, newID: newID}
	}
	return &alignedSet[In, S]{w: w, ops: ops, groups: map[window.Interval]*windowGroup[S]{}}
}

// alignedSet holds fixed or sliding windows: every key shares the same
// window boundaries, so windows are grouped by interval (few, in a heap by
// end) and each group maps keys to panes.
type alignedSet[In, S any] struct {
	w       vertex.Windowing
	ops     reduceOps[In, S]
	groups  map[window.Interval]*windowGroup[S]
	ends    groupHeap[S]
	panes   int
	scratch []window.Interval
	hit     []window.Interval // the windows of the last add
	last    *windowGroup[S]   // the group of the previous add (most messages hit it again)
}

// windowGroup is one interval's panes: each key's state under the key's
// encoding (internal/keys), the key list decoded from it when the window
// closes. An open (window, key) therefore costs a map slot, the encoded
// key and the state: a *pane holding the first message's key list too
// cost 102-131 bytes per open window, 2.2-3x a hand-written count's; this
// costs 43-75, 1.3-1.5x (docs/benchmarks.md, "Open windows at scale").
type windowGroup[S any] struct {
	iv   window.Interval
	keys map[string]*S
}

func (s *alignedSet[In, S]) add(m *vertex.Message[In], key []byte, wm int64) bool {
	s.scratch = windowSpec(s.w).Assign(m.EventTime.UnixNano(), s.scratch[:0])
	s.hit = s.hit[:0]
	for _, iv := range s.scratch {
		if windowSpec(s.w).ClosedAt(iv.End, wm) {
			continue
		}
		s.addTo(iv, m, key)
		s.hit = append(s.hit, iv)
	}
	return len(s.hit) > 0
}

// addTo adds m to window iv of key.
func (s *alignedSet[In, S]) addTo(iv window.Interval, m *vertex.Message[In], key []byte) {
	g := s.last
	if g == nil || g.iv != iv {
		g = s.groups[iv]
		if g == nil {
			g = &windowGroup[S]{iv: iv, keys: map[string]*S{}}
			s.groups[iv] = g
			heap.Push(&s.ends, g)
		}
		s.last = g
	}
	st := g.keys[string(key)] // no copy of key to look it up
	if st == nil {
		st = new(S)
		*st = s.ops.create()
		g.keys[string(key)] = st
		s.panes++
	}
	*st = s.ops.add(*st, *m)
}

func (s *alignedSet[In, S]) added(dst []wal.Window) []wal.Window {
	for _, iv := range s.hit {
		dst = append(dst, wal.Window{Start: time.Unix(0, iv.Start), End: time.Unix(0, iv.End)})
	}
	return dst
}

func (s *alignedSet[In, S]) replay(m *vertex.Message[In], key []byte, ws []wal.Window) {
	for _, w := range ws {
		s.addTo(window.Interval{Start: w.Start.UnixNano(), End: w.End.UnixNano()}, m, key)
	}
}

func (s *alignedSet[In, S]) closeUpTo(wm int64, emit func(window.Interval, *pane[S]) error) error {
	for len(s.ends) > 0 && windowSpec(s.w).ClosedAt(s.ends[0].iv.End, wm) {
		g := heap.Pop(&s.ends).(*windowGroup[S])
		delete(s.groups, g.iv)
		if s.last == g {
			s.last = nil
		}
		s.panes -= len(g.keys)
		for k, st := range g.keys {
			ks, _ := keys.Decode(k) // k is keys.Append's: it decodes
			if err := emit(g.iv, &pane[S]{keys: ks, state: *st}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *alignedSet[In, S]) oldestEnd() (int64, bool) {
	if len(s.ends) == 0 {
		return 0, false
	}
	return s.ends[0].iv.End, true
}

func (s *alignedSet[In, S]) size() int { return s.panes }

// groupHeap orders window groups by end, then start.
type groupHeap[S any] []*windowGroup[S]

func (h groupHeap[S]) Len() int { return len(h) }
func (h groupHeap[S]) Less(i, j int) bool {
	if h[i].iv.End != h[j].iv.End {
		return h[i].iv.End < h[j].iv.End
	}
	return h[i].iv.Start < h[j].iv.Start
}
func (h groupHeap[S]) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *groupHeap[S]) Push(x any)   { *h = append(*h, x.(*windowGroup[S])) }
func (h *groupHeap[S]) Pop() any {
	old := *h
	g := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return g
}

// sessionSet holds session windows: per key, its open sessions sorted by
// start and disjoint; a heap of (end, session) entries finds the oldest.
// An entry goes stale when its session grows or is merged away; stale
// entries are skipped when they reach the top.
type sessionSet[In, S any] struct {
	w     vertex.Windowing
	ops   reduceOps[In, S]
	byKey map[string][]*session[S]
	ends  sessionHeap[S]
	panes int
	newID func() uint64
	hit   *session[S] // the session of the last add
}

// session is one open session of one key.
type session[S any] struct {
	iv  window.Interval
	key string
	pane[S]
	gone bool // merged into another session, or closed
}

// sessionEntry is a session's place in the heap, valid while the session
// still ends at end.
type sessionEntry[S any] struct {
	end int64
	s   *session[S]
}

func (e sessionEntry[S]) stale() bool { return e.s.gone || e.s.iv.End != e.end }

func (s *sessionSet[In, S]) add(m *vertex.Message[In], key []byte, wm int64) bool {
	return s.addLogged(m, key, wm, 0)
}

func (s *sessionSet[In, S]) added(dst []wal.Window) []wal.Window {
	h := s.hit
	return append(dst, wal.Window{Start: time.Unix(0, h.iv.Start), End: time.Unix(0, h.iv.End), Session: h.ids[0]})
}

// replay adds m as add does, at no watermark (the log holds open sessions
// only), to a session that takes the logged id: merges rebuild the session
// of every id, so closing it closes them all.
func (s *sessionSet[In, S]) replay(m *vertex.Message[In], key []byte, ws []wal.Window) {
	s.addLogged(m, key, math.MinInt64, ws[0].Session)
}

// addLogged is add; a new session takes the id id (0: a new one), and a
// message that joins a session under another id adds it to the session's.
func (s *sessionSet[In, S]) addLogged(m *vertex.Message[In], key []byte, wm int64, id uint64) bool {
	t := m.EventTime.UnixNano()
	iv := window.Interval{Start: t, End: t + int64(s.w.Gap)}
	list := s.byKey[string(key)]
	// The open sessions the proto-session overlaps or touches (Flink's
	// TimeWindow.intersects): a contiguous run of the sorted list. A
	// session closed at wm is emitted as it is, never merged: its results
	// are due, and m, read at wm, came after they were. The closed sessions
	// of a key are a prefix of its list (disjoint sessions sorted by start
	// are sorted by end too), so skipping them keeps the run contiguous,
	// and a proto-session that is itself open starts after any closed one
	// it overlaps (its end is above the closed one's, and a session is at
	// least a gap long), so the list stays sorted by start and by end.
	lo, hi := len(list), len(list)
	for i, o := range list {
		if windowSpec(s.w).ClosedAt(o.iv.End, wm) {
			continue
		}
		if o.iv.Start <= iv.End && iv.Start <= o.iv.End {
			if lo == len(list) {
				lo = i
			}
			hi = i + 1
		} else if lo != len(list) {
			break
		}
	}
	if lo == len(list) {
		// A new session, unless it is closed already. Open sessions are
		// never closed (they end after wm - lateness), so a message that
		// joins one is never late.
		if windowSpec(s.w).ClosedAt(iv.End, wm) {
			return false
		}
		if id == 0 {
			id = s.newID()
		}
		ns := &session[S]{iv: iv, key: string(key), pane: pane[S]{keys: m.Keys, state: s.ops.create(), ids: []uint64{id}}}
		ns.state = s.ops.add(ns.state, *m)
		s.hit = ns
		at := len(list)
		for i, o := range list {
			if o.iv.Start > iv.Start {
				at = i
				break
			}
		}
		s.byKey[ns.key] = insertAt(list, at, ns)
		s.panes++
		heap.Push(&s.ends, sessionEntry[S]{end: iv.End, s: ns})
		return true
	}
	// Merge the run into its first session (the oldest), then add m.
	keep := list[lo]
	end := max(keep.iv.End, iv.End)
	keep.iv.Start = min(keep.iv.Start, iv.Start)
	for _, o := range list[lo+1 : hi] {
		keep.state = s.ops.merge(keep.state, o.state)
		keep.ids = append(keep.ids, o.ids...)
		end = max(end, o.iv.End)
		o.gone = true
		s.panes--
	}
	keep.state = s.ops.add(keep.state, *m)
	if id != 0 && !slices.Contains(keep.ids, id) {
		keep.ids = append(keep.ids, id)
	}
	s.hit = keep
	if end != keep.iv.End {
		keep.iv.End = end
		heap.Push(&s.ends, sessionEntry[S]{end: end, s: keep})
	}
	if hi-lo > 1 {
		s.byKey[keep.key] = append(list[:lo+1], list[hi:]...)
		clear(list[len(list)-(hi-lo-1):])
	}
	return true
}

func insertAt[E any](list []E, at int, e E) []E {
	var zero E
	list = append(list, zero)
	copy(list[at+1:], list[at:])
	list[at] = e
	return list
}

func (s *sessionSet[In, S]) closeUpTo(wm int64, emit func(window.Interval, *pane[S]) error) error {
	for {
		s.dropStale()
		if len(s.ends) == 0 || !windowSpec(s.w).ClosedAt(s.ends[0].end, wm) {
			return nil
		}
		e := heap.Pop(&s.ends).(sessionEntry[S])
		ses := e.s
		ses.gone = true
		s.panes--
		list := s.byKey[ses.key]
		for i, o := range list {
			if o == ses {
				list = append(list[:i], list[i+1:]...)
				list[len(list):cap(list)][0] = nil // drop the reference (cap > len after the removal)
				break
			}
		}
		if len(list) == 0 {
			delete(s.byKey, ses.key)
		} else {
			s.byKey[ses.key] = list
		}
		if err := emit(ses.iv, &ses.pane); err != nil {
			return err
		}
	}
}

// dropStale pops the stale entries off the top of the heap.
func (s *sessionSet[In, S]) dropStale() {
	for len(s.ends) > 0 && s.ends[0].stale() {
		heap.Pop(&s.ends)
	}
}

func (s *sessionSet[In, S]) oldestEnd() (int64, bool) {
	s.dropStale()
	if len(s.ends) == 0 {
		return 0, false
	}
	return s.ends[0].end, true
}

func (s *sessionSet[In, S]) size() int { return s.panes }

// sessionHeap orders session entries by end.
type sessionHeap[S any] []sessionEntry[S]

func (h sessionHeap[S]) Len() int           { return len(h) }
func (h sessionHeap[S]) Less(i, j int) bool { return h[i].end < h[j].end }
func (h sessionHeap[S]) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *sessionHeap[S]) Push(x any)        { *h = append(*h, x.(sessionEntry[S])) }
func (h *sessionHeap[S]) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = sessionEntry[S]{}
	*h = old[:len(old)-1]
	return e
}
