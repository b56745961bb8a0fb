package forwarder

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/vertex"
)

// closedSessionInput is the input of issue 18's first defect, as a source
// with MaxDelay 0 and one message per batch hands it on: per cycle c (1s
// apart), m1 at c, m2 at c+100ms and m3 at c+5ms, each read with the
// watermark of the batches before it (the source publishes the batch's
// event time after writing it, and its watermark never goes back): m1 with
// the previous cycle's c+100ms, m2 with c, m3 with c+100ms. m3's own
// session [c+5ms, c+15ms) and m1's [c, c+10ms) are both closed at c+100ms:
// m3 is late.
func closedSessionInput(cycles int) []msg {
	ms := time.Millisecond
	var msgs []msg
	prev := time.Duration(0)
	for k := range cycles {
		c := time.Duration(k+1) * time.Second
		at := func(id string, et, wm time.Duration) msg {
			return msg{ID: fmt.Sprintf("%s-%d", id, k), Keys: []string{"k"}, EventTime: time.Unix(0, int64(et)), Watermark: time.Unix(0, int64(wm))}
		}
		m3 := at("m3", c+5*ms, c+100*ms)
		m3.Headers = map[string]string{"src": "test"} // kept beside the late headers
		msgs = append(msgs, at("m1", c, prev), at("m2", c+100*ms, c), m3)
		prev = c + 100*ms
	}
	return msgs
}

// closedSessionWant is what closedSessionInput must give with windows w:
// per cycle m1's window and m2's window, one message each, and every m3
// late.
func closedSessionWant(cycles int, w vertex.Windowing) (results map[string]int64, late []string) {
	results = map[string]int64{}
	for k := range cycles {
		c := int64(time.Duration(k+1) * time.Second)
		for _, t := range []int64{c, c + int64(100*time.Millisecond)} {
			iv := windowSpec(w).Assign(t, nil)[0]
			results[resultID("r", iv, []string{"k"}, 0)] = 1
		}
		late = append(late, fmt.Sprintf("m3-%d", k))
	}
	return results, late
}

// TestReduceClosedSessionTakesNoMessage is issue 18's first defect: a
// message is judged late against the watermark it was read with, and no
// window set adds it to a window that watermark has closed. Before the
// fix, a chunk's watermark rose before its messages were added and the
// windows it closed were closed only after the loop, so each m3 merged
// into m1's closed session ([c, c+15ms) with 2 was emitted) while fixed
// windows sent it to the late stream. The input is driven by the
// watermarks the messages carry (no ticker), with one message per chunk
// as in the issue and with chunks of 7 (windows closing inside a chunk),
// on one and on two shards: the results are the same every time.
func TestReduceClosedSessionTakesNoMessage(t *testing.T) {
	const cycles = 20
	msgs := closedSessionInput(cycles)
	for _, w := range []vertex.Windowing{vertex.Session(10 * time.Millisecond), vertex.Fixed(10 * time.Millisecond)} {
		wantResults, wantLate := closedSessionWant(cycles, w)
		for _, size := range [][2]int{{1, 1}, {7, 1}, {7, 2}} {
			t.Run(fmt.Sprintf("%v/batch%d/shards%d", w.Kind, size[0], size[1]), func(t *testing.T) {
				o := runReduceSized(t, msgs, w, true, Final, size[0], size[1])
				if o.err != nil {
					t.Fatal(o.err)
				}
				got := map[string]int64{}
				for _, r := range o.results {
					got[r.ID] += r.Value.Value
				}
				if !maps.Equal(got, wantResults) || len(o.results) != len(wantResults) {
					t.Errorf("%d results, want %d: %s", len(o.results), len(wantResults), countDiff(got, wantResults))
				}
				var late []string
				for k, m := range o.late {
					late = append(late, m.ID)
					if want := lateHeaders(k, w); !maps.Equal(m.Headers, want) {
						t.Errorf("late %s: headers %v, want %v", m.ID, m.Headers, want)
					}
				}
				if !slices.Equal(late, wantLate) {
					t.Errorf("late stream %v, want %v", late, wantLate)
				}
				if o.stats.Late != cycles || o.stats.Results != int64(len(wantResults)) {
					t.Errorf("Stats.Late %d, Results %d; want %d, %d", o.stats.Late, o.stats.Results, cycles, len(wantResults))
				}
			})
		}
	}
}

// lateHeaders are the headers of cycle k's m3 on the late stream: read at
// c+100ms, its window (own session [c+5ms, c+15ms) or fixed [c, c+10ms))
// closed at its end, as the lateness is 0.
func lateHeaders(k int, w vertex.Windowing) map[string]string {
	c := time.Unix(int64(k+1), 0).UTC()
	end := c.Add(15 * time.Millisecond)
	if w.Kind == vertex.FixedWindows {
		end = c.Add(10 * time.Millisecond)
	}
	return map[string]string{
		"src":                      "test",
		vertex.LateWatermarkHeader: c.Add(100 * time.Millisecond).Format(time.RFC3339Nano),
		vertex.LateWindowEndHeader: end.Format(time.RFC3339Nano),
		vertex.LateClosedAtHeader:  end.Format(time.RFC3339Nano),
	}
}

// TestReduceClosedSessionTakesNoMessageWithWAL is the same input through
// a reduce with a WAL (no late edge: late messages are dropped): windows
// closed inside a chunk are emitted from entries handed to the log first,
// and the results are the same.
func TestReduceClosedSessionTakesNoMessageWithWAL(t *testing.T) {
	const cycles = 20
	msgs := closedSessionInput(cycles)
	w := vertex.Session(10 * time.Millisecond)
	want, _ := closedSessionWant(cycles, w)
	for _, batch := range []int{1, 7} {
		results := runLoggedSized(t, t.TempDir(), msgs, w, Final, Aggregate(vertex.Counting[int]()), batch)
		got := map[string]int64{}
		for _, r := range results {
			got[r.ID] += r.Value.Value
		}
		if !maps.Equal(got, want) || len(results) != len(want) {
			t.Errorf("batch %d: %d results, want %d: %s", batch, len(results), len(want), countDiff(got, want))
		}
	}
}

// countDiff describes how got differs from want, at most 4 entries each
// way.
func countDiff(got, want map[string]int64) string {
	var extra, missing []string
	for _, id := range slices.Sorted(maps.Keys(got)) {
		if w, ok := want[id]; !ok || w != got[id] {
			extra = append(extra, fmt.Sprintf("%s=%d", id, got[id]))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[id]; !ok || g != want[id] {
			missing = append(missing, fmt.Sprintf("%s=%d", id, want[id]))
		}
	}
	cut := func(s []string) []string { return s[:min(len(s), 4)] }
	return fmt.Sprintf("%d unexpected %v, %d missing %v", len(extra), cut(extra), len(missing), cut(missing))
}
