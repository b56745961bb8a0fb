package watermark

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// fetchModel is the naive reference for Fetch: every accepted WMB kept in
// a list, lookups by a full scan.
type fetchModel struct {
	wmbs   map[string][]WMB // edge/processor/partition -> accepted WMBs, oldest first
	last   map[string]time.Time
	vertex time.Time
}

func modelKey(edge int, proc string, part int) string {
	return fmt.Sprintf("%d/%s/%d", edge, proc, part)
}

// accept applies the timeline's rules: newer offset and not-older watermark
// appends; the same offset with a later watermark replaces.
func (m *fetchModel) accept(key string, w WMB) {
	l := m.wmbs[key]
	if n := len(l); n > 0 {
		cur := l[n-1]
		switch {
		case w.Watermark.Before(cur.Watermark) || w.Offset < cur.Offset:
			return
		case w.Offset == cur.Offset:
			l[n-1] = w
			return
		}
	}
	m.wmbs[key] = append(l, w)
}

func (m *fetchModel) lookup(key string, offset int64) (time.Time, bool) {
	l := m.wmbs[key]
	for i := len(l) - 1; i >= 0; i-- {
		if l[i].Offset < offset {
			return l[i].Watermark, true
		}
	}
	return time.Time{}, false
}

// TestFetchAgainstModel feeds random, partly out-of-order WMBs from several
// processors on two edges and two partitions, and compares every Fetch with
// the model. Fetches of a partition go forward (or repeat), as a reader's
// do, so what the timelines drop behind them is never asked for again; the
// bound is long enough that nothing falls out, so the model keeps every
// WMB.
//
// In strict mode (FetcherConfig.Processors: a, b, c on both edges) the
// processors do not heartbeat first, and steps of a kind the model ignores
// come in between: heartbeats put and deleted, timeouts, and WMBs with
// lower watermarks from a processor not expected. The model is the same:
// every expected processor counts, live or not, and no other.
func TestFetchAgainstModel(t *testing.T) {
	t.Run("loose", func(t *testing.T) { testFetchAgainstModel(t, false) })
	t.Run("strict", func(t *testing.T) { testFetchAgainstModel(t, true) })
}

func testFetchAgainstModel(t *testing.T, strict bool) {
	const edges, parts, steps = 2, 2, 3000
	procs := []string{"a", "b", "c"}
	kinds := 10 // of steps; strict mode adds 4 the model ignores
	if strict {
		kinds = 14
	}
	for seed := uint64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewPCG(seed, 5))
		clock := newFakeClock()
		cfg := FetcherConfig{
			Edges: []string{"e0", "e1"}, Partitions: []int{0, 1}, TimelineLength: steps, Clock: clock.Now,
		}
		if strict {
			cfg.Processors = map[string][]string{"e0": procs, "e1": procs}
		}
		f, err := NewFetcher(NewMemStore(), cfg)
		must(t, err)
		var ignored [edges]int // WMBs of x per edge
		m := &fetchModel{wmbs: map[string][]WMB{}, last: map[string]time.Time{}}
		// Per processor and partition, the next offset and watermark it
		// would publish; some WMBs are held back and delivered late.
		next := map[string]WMB{}
		var late []struct {
			edge int
			proc string
			w    WMB
		}
		for e := range edges {
			for _, p := range procs {
				if !strict { // strict: heard first by their WMBs
					beat(f, e, p, clock.Now())
				}
			}
		}
		fetched := make([]int64, parts) // the reader's offset per partition
		for step := range steps {
			e, p, part := rng.IntN(edges), procs[rng.IntN(len(procs))], rng.IntN(parts)
			key := modelKey(e, p, part)
			switch r := rng.IntN(kinds); {
			case r < 5: // publish the next WMB, or hold it back
				w, seen := next[key]
				if !seen {
					w.Watermark = ms(1000)
				}
				w.Offset += rng.Int64N(5)
				w.Watermark = ms(w.Watermark.UnixMilli() + rng.Int64N(20))
				w.Partition = int32(part)
				next[key] = WMB{Offset: w.Offset + 1, Watermark: w.Watermark}
				if rng.IntN(5) == 0 {
					late = append(late, struct {
						edge int
						proc string
						w    WMB
					}{e, p, w})
					continue
				}
				feed(t, f, e, p, w)
				m.accept(key, w)
			case r < 6 && len(late) > 0: // a held-back WMB arrives out of order
				l := late[0]
				late = late[1:]
				feed(t, f, l.edge, l.proc, l.w)
				m.accept(modelKey(l.edge, l.proc, int(l.w.Partition)), l.w)
			case r == 10: // strict: liveness the model does not see
				beat(f, e, p, clock.Now())
			case r == 11:
				f.apply(e, Update{Op: OpDelete, Key: heartbeatKey(p)})
			case r == 12: // every processor times out; the next change sweeps them
				clock.Advance(11 * time.Second)
				beat(f, e, procs[(slices.Index(procs, p)+1)%len(procs)], clock.Now())
			case r == 13: // a processor of another run
				feed(t, f, e, "x", WMB{Offset: rng.Int64N(100), Watermark: ms(rng.Int64N(1000)), Partition: int32(part)})
				ignored[e]++
			default:
				fetched[part] += rng.Int64N(2)
				off := fetched[part]
				got := f.Fetch(part, off)
				for pe := range edges {
					low, ok := time.Time{}, true
					for i, pp := range procs {
						wm, has := m.lookup(modelKey(pe, pp, part), off)
						if !has {
							ok = false
							break
						}
						if i == 0 || wm.Before(low) {
							low = wm
						}
					}
					lk := fmt.Sprintf("%d/%d", pe, part)
					if ok && low.After(m.last[lk]) {
						m.last[lk] = low
					}
				}
				var vlow time.Time
				for pe := range edges {
					for pp := range parts {
						if w := m.last[fmt.Sprintf("%d/%d", pe, pp)]; (pe == 0 && pp == 0) || w.Before(vlow) {
							vlow = w
						}
					}
				}
				if vlow.After(m.vertex) {
					m.vertex = vlow
				}
				if !got.Equal(m.vertex) {
					t.Fatalf("seed %d step %d: Fetch(%d, %d) = %v, model %v", seed, step, part, off, got, m.vertex)
				}
				// The per-edge partition watermarks match too (the vertex
				// minimum alone would hide most differences).
				for pe := range edges {
					if got, want := f.edges[pe].last[part], m.last[fmt.Sprintf("%d/%d", pe, part)]; !got.Equal(want) {
						t.Fatalf("seed %d step %d: edge %d partition %d watermark %v, model %v", seed, step, pe, part, got, want)
					}
				}
			}
		}
		if m.vertex.IsZero() {
			t.Fatalf("seed %d: the watermark never advanced: the test exercised nothing", seed)
		}
		for e, n := range ignored {
			if got := f.Ignored(cfg.Edges[e]); strict && (n == 0 || !slices.Equal(got, []string{"x"})) {
				t.Fatalf("seed %d: %d WMBs of x on edge %d, Ignored = %q; want some, and [x]", seed, n, e, got)
			}
		}
	}
}
