package forwarder

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/window"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/codec"
	"github.com/runnel-dev/runnel/isb/memory"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/wal"
)

// runLogged runs RunReduce with a WAL in dir over msgs followed by an end
// of stream of kind end, and returns the results by window and key.
func runLogged(t *testing.T, dir string, msgs []msg, w vertex.Windowing, end EndKind) []result {
	t.Helper()
	return runLoggedWith(t, dir, msgs, w, end, Aggregate(vertex.Counting[int]()))
}

// runLoggedWith is runLogged with any reducer.
func runLoggedWith[S, Out any](t *testing.T, dir string, msgs []msg, w vertex.Windowing, end EndKind, red Reducer[int, S, Out]) []vertex.Message[vertex.Windowed[Out]] {
	t.Helper()
	return runLoggedSized(t, dir, msgs, w, end, red, 7)
}

// runLoggedSized is runLoggedWith with the reduce's read batch size.
func runLoggedSized[S, Out any](t *testing.T, dir string, msgs []msg, w vertex.Windowing, end EndKind, red Reducer[int, S, Out], batch int) []vertex.Message[vertex.Windowed[Out]] {
	t.Helper()
	in := newTopic(t, "in")
	if _, err := in.Producer(nil).ProduceTo(context.Background(), 0, msgs); err != nil {
		t.Fatal(err)
	}
	if err := NewWriter([]Edge[int]{{To: "r", Topic: in}}, &Counters{}, nil, nil).WriteEnd(context.Background(), "src/0", end); err != nil {
		t.Fatal(err)
	}
	out, err := memory.NewTopic[vertex.Message[vertex.Windowed[Out]]]("out")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = out.Close() })
	c, err := in.PullConsumer("reduce", isb.BatchSize(batch), isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	log, err := wal.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := log.Close(); err != nil {
			t.Error(err)
		}
	}()
	opts, err := NewOptions(vertex.BatchSize(batch), vertex.Concurrency(3))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Vertex: "r", Options: opts, Counters: &Counters{}}
	spec := ReduceSpec[int, S, Out]{Window: w, Reducer: red,
		Log: &ReduceLog[int]{WALs: map[int]*wal.WAL{0: log}, Codec: codec.JSON[int]()}}
	ctx := context.Background()
	if err := RunReduce(ctx, ctx, cfg, Input[int]{Consumer: c, Partitions: 1, Writers: 1}, []Edge[vertex.Windowed[Out]]{{To: "out", Topic: out}}, spec); err != nil {
		t.Fatalf("RunReduce: %v", err)
	}
	results, _ := splitEnds(readAll(t, out))
	return results
}

// TestReplayedMessagesKeepTheirIDs: a streaming reducer sees the messages
// replayed from the WAL with their IDs (and values, keys, event times), in
// the order they were first added, then the new ones.
func TestReplayedMessagesKeepTheirIDs(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	msgs := make([]msg, 10)
	for i := range msgs {
		msgs[i] = msg{ID: fmt.Sprintf("id-%d", i), Keys: []string{[]string{"a", "b"}[i%2]},
			EventTime: at.Add(time.Duration(i) * time.Millisecond), Value: 100 + i}
	}
	// Each window's result lists what the reducer saw of each message.
	seen := StreamReduce(func(_ context.Context, _ vertex.Window, _ []string, ms iter.Seq[vertex.Message[int]], emit func(string) error) error {
		var b strings.Builder
		for m := range ms {
			fmt.Fprintf(&b, "%s=%d@%d;", m.ID, m.Value, m.EventTime.Sub(at).Milliseconds())
		}
		return emit(b.String())
	})
	dir := t.TempDir()
	if got := runLoggedWith(t, dir, msgs[:6], vertex.Fixed(time.Minute), Stopped, seen); len(got) != 0 {
		t.Fatalf("a Stopped end emitted %d results", len(got))
	}
	// The second run reads all ten again: the first six are redelivered
	// and skipped (the log holds them), the last four are new.
	got := map[string]string{}
	for _, r := range runLoggedWith(t, dir, msgs, vertex.Fixed(time.Minute), Final, seen) {
		got[r.Value.Keys[0]] = r.Value.Value
	}
	want := map[string]string{
		"a": "id-0=100@0;id-2=102@2;id-4=104@4;id-6=106@6;id-8=108@8;",
		"b": "id-1=101@1;id-3=103@3;id-5=105@5;id-7=107@7;id-9=109@9;",
	}
	if !maps.Equal(got, want) {
		t.Fatalf("the streaming reducer saw\n%v\nwant\n%v", got, want)
	}
}

// With a WAL, a Stopped end keeps the open windows in the log instead of
// emitting them; the next run replays them, skips the redelivered
// messages the log holds (the same offsets again), adds the new ones, and
// a Final end emits every window once, with the counts of both runs. Fixed
// and session windows (sessions that the second run's messages merge).
func TestRunReduceWALKeepsWindowsAcrossRuns(t *testing.T) {
	keyed := func(from, n int, at func(i int) time.Duration) []msg {
		msgs := make([]msg, n)
		for i := range msgs {
			j := from + i
			msgs[i] = msg{ID: "m" + string(rune('a'+j%26)), Keys: []string{[]string{"a", "b", "c"}[j%3]}, EventTime: time.Unix(0, int64(at(j))), Value: j}
		}
		return msgs
	}
	tests := []struct {
		name string
		w    vertex.Windowing
		at   func(i int) time.Duration
		want func(all []msg) map[string]int64
	}{
		{"fixed", vertex.Fixed(time.Second), func(i int) time.Duration { return time.Duration(i) * 100 * time.Millisecond },
			func(all []msg) map[string]int64 {
				want := map[string]int64{}
				for _, m := range all {
					s := m.EventTime.Truncate(time.Second).UnixNano()
					want[resultID("r", window.Interval{Start: s, End: s + 1e9}, m.Keys, 0)]++
				}
				return want
			}},
		{"session", vertex.Session(3 * time.Second), func(i int) time.Duration {
			// First run: two sessions per key (about [0,3.3s) and
			// [4s,7.3s)); the second run bridges them at 2.5s and adds a
			// third session at 20s.
			switch {
			case i < 6:
				return time.Duration(i) * 100 * time.Millisecond
			case i < 12:
				return 4*time.Second + time.Duration(i-6)*100*time.Millisecond
			case i < 15:
				return 2500 * time.Millisecond
			}
			return 20 * time.Second
		}, func(all []msg) map[string]int64 {
			want := map[string]int64{}
			for _, k := range []string{"a", "b", "c"} {
				var first, second int64
				var end1, end2 int64
				start1 := int64(math.MaxInt64)
				for _, m := range all {
					if m.Keys[0] != k {
						continue
					}
					if t := m.EventTime.UnixNano(); t < 10e9 {
						first++
						start1, end1 = min(start1, t), max(end1, t+3e9)
					} else {
						second++
						end2 = max(end2, t+3e9)
					}
				}
				want[resultID("r", window.Interval{Start: start1, End: end1}, []string{k}, 0)] = first
				want[resultID("r", window.Interval{Start: 20e9, End: end2}, []string{k}, 0)] = second
			}
			return want
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			first := keyed(0, 12, tt.at)
			if got := runLogged(t, dir, first, tt.w, Stopped); len(got) != 0 {
				t.Fatalf("a Stopped end with a WAL emitted %d results, want none (kept in the log)", len(got))
			}
			all := append(first, keyed(12, 6, tt.at)...)
			got := map[string]int64{}
			results := runLogged(t, dir, all, tt.w, Final)
			for _, r := range results {
				got[r.ID] = r.Value.Value
			}
			want := tt.want(all)
			if len(results) != len(want) || !maps.Equal(got, want) {
				t.Fatalf("after the restart: %d results %v, want %v", len(results), got, want)
			}
			// Everything was emitted and closed: a third run on the log
			// replays nothing and emits nothing.
			if got := runLogged(t, dir, all, tt.w, Final); len(got) != 0 {
				t.Fatalf("a third run emitted %d results again", len(got))
			}
		})
	}
}
