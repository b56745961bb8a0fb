package e2e

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// The reduce tests run random keyed event-time streams through source ->
// reduce -> sink (and source -> reduce -> reduce -> sink) and compare every
// result with an oracle computed directly from the input.
//
// What makes lateness predictable with real watermarks: every source
// replica emits its stream in two phases.
//
//   - Phase 1 is out of order within bound B and the sources' MaxDelay is
//     B, so no phase-1 message is late anywhere: the reduce watermark never
//     passes the event time of a message not yet read (it is at most the
//     source watermark before that message's batch, which is at most
//     its event time).
//   - Then each source replica waits until the reduce vertex's watermark
//     has reached wFinal, the lowest final phase-1 source watermark, and
//     emits phase 2: messages behind the watermark, whose event times do
//     not raise any source watermark. The reduce watermark is therefore
//     exactly in [wFinal, wMax] while phase 2 is read (wMax: the highest
//     final source watermark), and the oracle picks phase-2 messages whose
//     fate is the same at both ends: "late" ones (every window closed)
//     and "lateness" ones (behind the watermark, their window still open:
//     accepted, where Numaflow drops them).

// rdBase is the event time the reduce tests start at.
var rdBase = time.Unix(1_800_000_000, 0).UTC()

// ev is the payload of the reduce tests.
type ev struct{ V int64 }

// agg is what the tests' reduce computes per window and key.
type agg struct{ Count, Sum int64 }

var sumAgg = vertex.Aggregator[ev, agg, agg]{
	Create: func() agg { return agg{} },
	Add:    func(a agg, m vertex.Message[ev]) agg { return agg{a.Count + 1, a.Sum + m.Value.V} },
	Merge:  func(a, b agg) agg { return agg{a.Count + b.Count, a.Sum + b.Sum} },
	Result: func(a agg) agg { return a },
}

// chainAgg sums the results of the first reduce.
var chainAgg = vertex.Aggregator[vertex.Windowed[agg], agg, agg]{
	Create: func() agg { return agg{} },
	Add: func(a agg, m vertex.Message[vertex.Windowed[agg]]) agg {
		return agg{a.Count + m.Value.Value.Count, a.Sum + m.Value.Value.Sum}
	},
	Merge:  func(a, b agg) agg { return agg{a.Count + b.Count, a.Sum + b.Sum} },
	Result: func(a agg) agg { return a },
}

// streamSum is sumAgg as a streaming reducer; it emits a second result,
// the window's largest value, for windows of an odd count, so a window may
// have several results.
func streamSum(_ context.Context, _ vertex.Window, _ []string, msgs iter.Seq[vertex.Message[ev]], emit func(agg) error) error {
	var a agg
	var top int64
	for m := range msgs {
		a.Count++
		a.Sum += m.Value.V
		top = max(top, m.Value.V)
	}
	if err := emit(a); err != nil {
		return err
	}
	if a.Count%2 == 1 {
		return emit(agg{Count: -1, Sum: top})
	}
	return nil
}

// wkey identifies one result: window and key.
type wkey struct {
	start, end int64
	key        string
}

func (k wkey) String() string { return fmt.Sprintf("%s[%d,%d)", k.key, k.start, k.end) }

// oracle is the reference model: which windows a message belongs to, and
// the results of a set of accepted messages.
type oracle struct {
	w vertex.Windowing
}

// windows are the (non-session) windows containing t, by the definition:
// every start offset + k*slide with start <= t < start + length.
func (o oracle) windows(t int64) [][2]int64 {
	length, period := int64(o.w.Length), int64(o.w.Length)
	if o.w.Kind == vertex.SlidingWindows {
		period = int64(o.w.Slide)
	}
	off := int64(o.w.Offset)
	k := (t - off) / period
	for off+k*period > t {
		k--
	}
	for off+(k+1)*period <= t {
		k++
	}
	var out [][2]int64
	for ; off+k*period > t-length; k-- {
		out = append(out, [2]int64{off + k*period, off + k*period + length})
	}
	return out
}

// omsg is a message as the oracle sees it.
type omsg struct {
	key string
	et  int64
	v   int64
}

// results computes every (window, key) result of msgs.
func (o oracle) results(msgs []omsg) map[wkey][]agg {
	acc := map[wkey]*agg{}
	top := map[wkey]int64{}
	addTo := func(k wkey, m omsg) {
		a := acc[k]
		if a == nil {
			a = &agg{}
			acc[k] = a
		}
		a.Count++
		a.Sum += m.v
		top[k] = max(top[k], m.v)
	}
	if o.w.Kind == vertex.SessionWindows {
		for _, s := range o.sessions(msgs) {
			for _, m := range s.msgs {
				addTo(s.k, m)
			}
		}
	} else {
		for _, m := range msgs {
			for _, w := range o.windows(m.et) {
				addTo(wkey{w[0], w[1], m.key}, m)
			}
		}
	}
	out := map[wkey][]agg{}
	for k, a := range acc {
		out[k] = []agg{*a}
		_ = top
	}
	return out
}

// withTops adds the streaming reducer's second result (count -1, the
// largest value) to every window of an odd count.
func withTops(o oracle, msgs []omsg, res map[wkey][]agg) {
	top := map[wkey]int64{}
	if o.w.Kind == vertex.SessionWindows {
		for _, s := range o.sessions(msgs) {
			for _, m := range s.msgs {
				top[s.k] = max(top[s.k], m.v)
			}
		}
	} else {
		for _, m := range msgs {
			for _, w := range o.windows(m.et) {
				k := wkey{w[0], w[1], m.key}
				top[k] = max(top[k], m.v)
			}
		}
	}
	for k, a := range res {
		if a[0].Count%2 == 1 {
			res[k] = append(a, agg{Count: -1, Sum: top[k]})
		}
	}
}

// osession is one session of the oracle.
type osession struct {
	k    wkey
	msgs []omsg
}

// sessions sweeps each key's messages in event-time order: a message
// whose [t, t+gap) overlaps or touches the current session extends it.
func (o oracle) sessions(msgs []omsg) []osession {
	byKey := map[string][]omsg{}
	for _, m := range msgs {
		byKey[m.key] = append(byKey[m.key], m)
	}
	gap := int64(o.w.Gap)
	var out []osession
	for key, ms := range byKey {
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].et < ms[j].et })
		var cur *osession
		for _, m := range ms {
			if cur != nil && m.et <= cur.k.end {
				cur.k.end = max(cur.k.end, m.et+gap)
				cur.msgs = append(cur.msgs, m)
				continue
			}
			if cur != nil {
				out = append(out, *cur)
			}
			cur = &osession{k: wkey{m.et, m.et + gap, key}, msgs: []omsg{m}}
		}
		if cur != nil {
			out = append(out, *cur)
		}
	}
	return out
}

// lateAt reports whether m is late at watermark wm given the sessions of
// the accepted messages: every window of m is closed (for sessions: its
// proto-session is closed and touches no session of its key still open).
func (o oracle) lateAt(m omsg, sessions []osession, wm int64) bool {
	closed := func(end int64) bool { return wm >= end+int64(o.w.AllowedLateness) }
	if o.w.Kind != vertex.SessionWindows {
		for _, w := range o.windows(m.et) {
			if !closed(w[1]) {
				return false
			}
		}
		return true
	}
	if !closed(m.et + int64(o.w.Gap)) {
		return false
	}
	for _, s := range sessions {
		if s.k.key == m.key && !closed(s.k.end) && s.k.start <= m.et+int64(o.w.Gap) && m.et <= s.k.end {
			return false
		}
	}
	return true
}

// phasedSource gives every source replica its phase-1 messages, then
// waits for the gate, then gives its phase-2 messages; batch by batch of
// exactly max, so the source watermarks are known in advance.
type phasedSource struct {
	phase1, phase2 [][]vertex.Message[ev]
	gate           chan struct{} // closed when phase 2 may start
	mu             sync.Mutex
	next           []int
}

func (s *phasedSource) Read(ctx context.Context, max int) ([]vertex.Message[ev], error) {
	r, _ := vertex.ReplicaFrom(ctx)
	s.mu.Lock()
	at := s.next[r.Index]
	s.mu.Unlock()
	msgs := s.phase1[r.Index]
	if at >= len(msgs) {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		at -= len(msgs)
		msgs = s.phase2[r.Index]
		if at >= len(msgs) {
			return nil, io.EOF
		}
	}
	end := min(at+max, len(msgs))
	s.mu.Lock()
	s.next[r.Index] += end - at
	s.mu.Unlock()
	return slices.Clone(msgs[at:end]), nil
}

// reduceCase is one run of the oracle test.
type reduceCase struct {
	name    string
	window  vertex.Windowing
	stream  bool             // use ReduceStream (streamSum) instead of sumAgg
	chain   vertex.Windowing // Kind != 0: a second reduce after the first
	seed    uint64
	sources int
}

// resultSink records every result per (window, key).
type resultSink[T any] struct {
	mu  sync.Mutex
	got map[wkey][]T
	n   int
}

func newResultSink[T any]() *resultSink[T] { return &resultSink[T]{got: map[wkey][]T{}} }

func (s *resultSink[T]) results() vertex.Sink[vertex.Windowed[T]] {
	return vertex.Func(func(_ context.Context, ms []vertex.Message[vertex.Windowed[T]]) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, m := range ms {
			w := m.Value
			k := wkey{w.Window.Start.UnixNano(), w.Window.End.UnixNano(), w.Keys[0]}
			s.got[k] = append(s.got[k], w.Value)
			s.n++
			if !m.EventTime.Equal(w.Window.End.Add(-time.Millisecond)) || !slices.Equal(m.Keys, w.Keys) {
				panic(fmt.Sprintf("result %v: event time %v keys %v", k, m.EventTime, m.Keys))
			}
		}
		return nil
	})
}

// compare checks got against want: every (window, key) once, with the
// same results (in any order: a sink's workers may reorder them).
func compare(t *testing.T, what string, got, want map[wkey][]agg) {
	t.Helper()
	byValue := func(a, b agg) int { return cmp.Or(cmp.Compare(a.Count, b.Count), cmp.Compare(a.Sum, b.Sum)) }
	for _, m := range []map[wkey][]agg{got, want} {
		for _, rs := range m {
			slices.SortFunc(rs, byValue)
		}
	}
	bad := 0
	report := func(format string, args ...any) {
		if bad < 8 {
			t.Errorf(what+": "+format, args...)
		}
		bad++
	}
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			report("%v missing, want %v", k, w)
		case !slices.Equal(g, w):
			report("%v = %v, want %v", k, g, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			report("%v = %v emitted, the oracle has no such window", k, g)
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d results wrong (got %d windows, want %d)", what, bad, len(got), len(want))
	}
}

const (
	rdKeys    = 12
	rdBound   = 20 * time.Millisecond // out of order within; the sources' MaxDelay
	rdStep    = time.Millisecond
	rdBurst   = 100 // messages per burst per source replica
	rdQuiet   = 100 * time.Millisecond
	rdBursts  = 10
	rdBatch   = 37 // source batch size
	rdPhase2a = 40 // late messages per source replica
	rdPhase2b = 30 // lateness messages per source replica
)

func TestReduceAgainstOracle(t *testing.T) {
	ms := time.Millisecond
	cases := []reduceCase{
		{name: "fixed", window: vertex.Fixed(100 * ms).WithAllowedLateness(150 * ms), seed: 1, sources: 3},
		{name: "fixed-offset-stream", window: vertex.Fixed(70 * ms).WithOffset(13 * ms).WithAllowedLateness(120 * ms), stream: true, seed: 2, sources: 2},
		{name: "sliding", window: vertex.Sliding(100*ms, 25*ms).WithAllowedLateness(150 * ms), seed: 3, sources: 3},
		{name: "session", window: vertex.Session(30 * ms).WithAllowedLateness(150 * ms), seed: 4, sources: 3},
		{name: "session-stream", window: vertex.Session(30 * ms).WithAllowedLateness(150 * ms), stream: true, seed: 5, sources: 2},
		{name: "chain-sliding-fixed", window: vertex.Sliding(60*ms, 20*ms).WithAllowedLateness(150 * ms), chain: vertex.Fixed(200 * ms), seed: 6, sources: 3},
		{name: "chain-session-sliding", window: vertex.Session(30 * ms).WithAllowedLateness(150 * ms), chain: vertex.Sliding(400*ms, 200*ms).WithAllowedLateness(50 * ms), seed: 7, sources: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runReduceCase(t, tc) })
	}
}

func runReduceCase(t *testing.T, tc reduceCase) {
	r := rand.New(rand.NewPCG(tc.seed, 99))
	o := oracle{w: tc.window}
	src := &phasedSource{gate: make(chan struct{}), next: make([]int, tc.sources),
		phase1: make([][]vertex.Message[ev], tc.sources), phase2: make([][]vertex.Message[ev], tc.sources)}
	var accepted []omsg
	byID := map[string]omsg{}
	msg := func(id string, m omsg) vertex.Message[ev] {
		byID[id] = m
		return vertex.Message[ev]{ID: id, Keys: []string{m.key}, EventTime: time.Unix(0, m.et), Value: ev{m.v}}
	}
	randKey := func() string { return "k" + strconv.Itoa(r.IntN(rdKeys)) }
	// Phase 1: bursts of rdBurst messages rdStep apart, then rdQuiet,
	// each event time jittered forward by less than rdBound.
	wFinal, wMax := int64(0), int64(0)
	for s := range tc.sources {
		for i := range rdBursts * rdBurst {
			burst, within := i/rdBurst, i%rdBurst
			et := rdBase.UnixNano() + int64(burst)*int64(rdBurst*rdStep+rdQuiet) + int64(within)*int64(rdStep) + r.Int64N(int64(rdBound))
			m := omsg{key: randKey(), et: et, v: r.Int64N(100)}
			accepted = append(accepted, m)
			src.phase1[s] = append(src.phase1[s], msg(fmt.Sprintf("s%d-%d", s, i), m))
		}
		// The source watermark after phase 1: the highest batch minimum
		// minus MaxDelay (the batches are exactly rdBatch long).
		var wm int64
		for at := 0; at < len(src.phase1[s]); at += rdBatch {
			low := src.phase1[s][at].EventTime.UnixNano()
			for _, m := range src.phase1[s][at:min(at+rdBatch, len(src.phase1[s]))] {
				low = min(low, m.EventTime.UnixNano())
			}
			wm = max(wm, low-int64(rdBound))
		}
		if s == 0 || wm < wFinal {
			wFinal = wm
		}
		wMax = max(wMax, wm)
	}
	// Phase 2: "late" messages early in the stream, "lateness" messages
	// just behind wFinal whose windows stay open up to wMax. The oracle
	// checks each one's fate at both ends of the watermark's range.
	lateness := int64(tc.window.AllowedLateness)
	var wantLate []string
	var lateMsgs []omsg
	for s := range tc.sources {
		for i := range rdPhase2a + rdPhase2b {
			isLate := i < rdPhase2a
			var m omsg
			for {
				m = omsg{key: randKey(), v: r.Int64N(100)}
				if isLate {
					m.et = rdBase.UnixNano() + r.Int64N(int64(rdBursts*rdBurst*int(rdStep))/3)
				} else {
					m.et = wMax - lateness + 1 + r.Int64N(wFinal-(wMax-lateness+1))
				}
				break
			}
			id := fmt.Sprintf("s%d-late%d", s, i)
			if isLate {
				wantLate = append(wantLate, id)
				lateMsgs = append(lateMsgs, m)
			} else {
				accepted = append(accepted, m)
			}
			src.phase2[s] = append(src.phase2[s], msg(id, m))
		}
	}
	if wMax-lateness+1 >= wFinal {
		t.Fatalf("test setup: the source watermarks spread %v, more than the lateness %v", time.Duration(wMax-wFinal), tc.window.AllowedLateness)
	}
	var sessions []osession
	if tc.window.Kind == vertex.SessionWindows {
		sessions = o.sessions(accepted)
	}
	for _, m := range lateMsgs {
		if !o.lateAt(m, sessions, wFinal) || !o.lateAt(m, sessions, wMax) {
			t.Fatalf("test setup: late message %+v is not late at both %d and %d", m, wFinal, wMax)
		}
	}
	for _, m := range accepted[len(accepted)-tc.sources*rdPhase2b:] {
		if o.lateAt(m, sessions, wFinal) || o.lateAt(m, sessions, wMax) || m.et >= wFinal {
			t.Fatalf("test setup: lateness message %+v is late, or not behind the watermark", m)
		}
	}
	want := o.results(accepted)
	if tc.stream {
		withTops(o, accepted, want)
	}

	p := pipeline.New("reduce-"+tc.name, pipeline.Watermarks(pipeline.WatermarkConfig{
		MaxDelay: rdBound, PartitionIdleThreshold: 20 * time.Millisecond, IdleInterval: 5 * time.Millisecond,
	}))
	in := pipeline.Source(p, "src", src, vertex.Replicas(tc.sources), vertex.BatchSize(rdBatch))
	ropts := []vertex.Option{vertex.Replicas(2), vertex.Partitions(4), vertex.BatchSize(16), vertex.Concurrency(2), vertex.BufferCapacity(256)}
	var res pipeline.Stream[vertex.Windowed[agg]]
	var late pipeline.Stream[ev]
	if tc.stream {
		res, late = pipeline.ReduceStream(p, "reduce", in, tc.window, streamSum, ropts...)
	} else {
		res, late = pipeline.Reduce(p, "reduce", in, tc.window, sumAgg, ropts...)
	}
	first, lateSink := newResultSink[agg](), newCounter[ev]()
	pipeline.Sink(p, "late", late, lateSink)
	var second *resultSink[agg]
	late2Sink := newCounter[vertex.Windowed[agg]]()
	if tc.chain.Kind != 0 {
		second = newResultSink[agg]()
		res2, late2 := pipeline.Reduce(p, "reduce2", res, tc.chain, chainAgg, ropts...)
		pipeline.Sink(p, "results2", res2, second.results())
		pipeline.Sink(p, "late2", late2, late2Sink)
	}
	pipeline.Sink(p, "results", res, first.results())

	// The gate: phase 2 starts once the reduce watermark reached wFinal.
	stopGate, began := make(chan struct{}), time.Now()
	var gateWG sync.WaitGroup
	gateWG.Go(func() {
		for {
			for _, s := range p.Stats() {
				if s.Name == "reduce" && s.Watermark.UnixNano() >= wFinal {
					if s.Watermark.UnixNano() > wMax {
						t.Errorf("reduce watermark %d above every source's %d before phase 2", s.Watermark.UnixNano(), wMax)
					}
					close(src.gate)
					t.Logf("phase 2 after %v", time.Since(began))
					return
				}
			}
			select {
			case <-stopGate:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	})
	run(t, p, 60*time.Second)
	close(stopGate)
	gateWG.Wait()
	checkDrained(t, p)

	compare(t, "reduce", first.got, want)
	gotLate := lateSink.snapshot()
	wantLateIDs := map[string]int{}
	for _, id := range wantLate {
		wantLateIDs[id] = 1
	}
	diff(t, "late", gotLate, wantLateIDs)
	for id := range gotLate {
		if wantLateIDs[id] == 0 { // what the reduce judged it against, for the report
			h, m := lateSink.headersOf(id), byID[id]
			t.Logf("%s (key %s, event %d) judged late: watermark %s, window end %s, closed at %s; wFinal %d, wMax %d",
				id, m.key, m.et, h[vertex.LateWatermarkHeader], h[vertex.LateWindowEndHeader], h[vertex.LateClosedAtHeader], wFinal, wMax)
		}
	}
	for _, s := range p.Stats() {
		if s.Name == "reduce" && s.Late != int64(len(wantLate)) {
			t.Errorf("reduce counted %d late, want %d", s.Late, len(wantLate))
		}
	}
	if second != nil {
		// The chain's oracle: the second reduce over the first's oracle
		// results, each at event time end - 1ms with its key. None is late.
		o2 := oracle{w: tc.chain}
		want2 := map[wkey][]agg{}
		add := func(k wkey, c, s int64) {
			if want2[k] == nil {
				want2[k] = []agg{{}}
			}
			want2[k][0].Count += c
			want2[k][0].Sum += s
		}
		if tc.chain.Kind == vertex.SessionWindows {
			t.Fatal("a session chain is not modelled")
		}
		for k, a := range want {
			m := omsg{key: k.key, et: k.end - int64(time.Millisecond)}
			for _, w := range o2.windows(m.et) {
				add(wkey{w[0], w[1], m.key}, a[0].Count, a[0].Sum)
			}
		}
		compare(t, "reduce2", second.got, want2)
		if n := late2Sink.total(); n != 0 {
			t.Errorf("reduce2: %d late results; the first reduce's watermark must keep every result on time", n)
		}
	}
	t.Logf("%d results, %d late, %d accepted behind the watermark", first.n, lateSink.total(), tc.sources*rdPhase2b)
}
