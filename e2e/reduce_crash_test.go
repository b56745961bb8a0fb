package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// The crash test of reduce on durable storage: a child process runs
// topic source -> assign (keys and event time from the id) -> reduce
// (fixed windows) and reduce (session windows) -> one sink each, on mmap
// storage with the reduce WAL. Each sink appends "id count" per result to
// its file and fsyncs before it returns. Every round the parent adds ids to
// the input topic, starts the child on the same directories and kills it
// with SIGKILL at a random moment (every fourth round SIGTERM: a clean
// stop, whose Stopped end keeps the open windows in the WAL). A run that
// drains the topic ends by itself: the end of stream closes every window.
// Each round's ids have event times an hour apart from the previous
// round's and in the future of the wall-clock watermark, so no message is
// late and the oracle is exact: the final set of (window, key) results
// must equal the oracle computed from the ids, and a result seen twice must
// be identical (a re-emission of a window whose GC event a kill lost).

const (
	reduceCrashKeys  = 40
	reduceCrashFixed = 100 * time.Millisecond // fixed window length
	reduceCrashGap   = 5 * time.Millisecond   // session gap
)

// reduceCrashBase is the event time of the first id: in the future, so
// that the sources' wall-clock watermark closes nothing before the end of
// stream, and within the WAL's time range.
var reduceCrashBase = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

// reduceCrashEvent is the event time of id, in rounds of perRound ids an
// hour apart: 50µs between ids, and a 10ms hole every 500 ids (which
// splits sessions; 2 topic partitions interleave them out of order).
func reduceCrashEvent(id, perRound int64) time.Time {
	r, i := id/perRound, id%perRound
	return reduceCrashBase.Add(time.Duration(r)*time.Hour + time.Duration(i)*50*time.Microsecond + time.Duration(i/500)*10*time.Millisecond)
}

func reduceCrashKey(id int64) string { return strconv.FormatInt(id%reduceCrashKeys, 10) }

// crashResultSink writes "id count" per result to its file and fsyncs.
type crashResultSink struct {
	mu  sync.Mutex
	f   *os.File
	buf []byte
}

func (s *crashResultSink) Write(_ context.Context, msgs []vertex.Message[vertex.Windowed[int64]]) ([]vertex.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = s.buf[:0]
	for _, m := range msgs {
		s.buf = fmt.Appendf(s.buf, "%s %d\n", m.ID, m.Value.Value)
	}
	if _, err := s.f.Write(s.buf); err != nil {
		return nil, err
	}
	return nil, s.f.Sync()
}

func reduceCrashFiles(dir string) (fixed, session string) {
	return filepath.Join(dir, "fixed.txt"), filepath.Join(dir, "session.txt")
}

// countDistinct counts the distinct ids of a window. The source and the
// map before the reduce deliver at least once: a kill makes them send
// again what they had not committed, and a plain count would count those
// duplicates, which are no fault of the reduce. Counting distinct ids makes
// the oracle exact while still catching every lost or extra id.
func countDistinct() vertex.Aggregator[int64, map[int64]struct{}, int64] {
	return vertex.Aggregator[int64, map[int64]struct{}, int64]{
		Create: func() map[int64]struct{} { return map[int64]struct{}{} },
		Add: func(acc map[int64]struct{}, m vertex.Message[int64]) map[int64]struct{} {
			acc[m.Value] = struct{}{}
			return acc
		},
		Merge: func(a, b map[int64]struct{}) map[int64]struct{} {
			maps.Copy(a, b)
			return a
		},
		Result: func(acc map[int64]struct{}) int64 { return int64(len(acc)) },
	}
}

// reduceCrashChild runs the pipeline until the input topic is drained
// (exit 0), SIGTERM (a clean stop, exit 0) or SIGKILL.
func reduceCrashChild() int {
	dir := os.Getenv("RUNNEL_E2E_DIR")
	perRound, _ := strconv.ParseInt(os.Getenv("RUNNEL_E2E_PER_ROUND"), 10, 64)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	topic, err := openCrashInput(dir)
	if err != nil {
		return childFail("open input: %v", err)
	}
	defer topic.Close()
	_, data, _ := crashDirs(dir)
	fixedFile, sessionFile := reduceCrashFiles(dir)
	var sinks []*crashResultSink
	for _, name := range []string{fixedFile, sessionFile} {
		f, err := os.OpenFile(name, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return childFail("open sink file: %v", err)
		}
		defer f.Close()
		sinks = append(sinks, &crashResultSink{f: f})
	}
	p := pipeline.New("crash", pipeline.WithDataDir(data))
	ids := pipeline.Source(p, "ids", vertex.FromTopic(topic, crashSourceName, vertex.EndWhenEmpty()), vertex.BatchSize(200))
	assigned := pipeline.FlatMap(p, "assign", ids, func(_ context.Context, m vertex.Message[int64]) ([]vertex.Message[int64], error) {
		return []vertex.Message[int64]{{ID: m.ID, Keys: []string{reduceCrashKey(m.Value)}, EventTime: reduceCrashEvent(m.Value, perRound), Value: m.Value}}, nil
	}, vertex.BatchSize(200), vertex.BufferCapacity(5000))
	fixed, _ := pipeline.Reduce(p, "fixed", assigned, vertex.Fixed(reduceCrashFixed), countDistinct(),
		vertex.Replicas(2), vertex.BatchSize(200), vertex.BufferCapacity(5000))
	sessions, _ := pipeline.Reduce(p, "session", assigned, vertex.Session(reduceCrashGap), countDistinct(),
		vertex.Replicas(2), vertex.BatchSize(200), vertex.BufferCapacity(5000))
	pipeline.Sink(p, "fixed-out", fixed, sinks[0], vertex.BatchSize(100))
	pipeline.Sink(p, "session-out", sessions, sinks[1], vertex.BatchSize(100))
	fmt.Fprintln(os.Stdout, "S") // SIGTERM is handled from here on
	if err := p.Run(ctx); err != nil {
		return childFail("run: %v", err)
	}
	fmt.Fprintln(os.Stdout, "D")
	return 0
}

// reduceCrashOracle computes every (window, key) result of ids [0, total)
// by result ID, for both reduce vertices.
func reduceCrashOracle(total, perRound int64) (fixed, session map[string]int64) {
	id := func(v string, start, end time.Time, key string) string {
		return fmt.Sprintf("%s/%d-%d/%s", v, start.UnixNano(), end.UnixNano(), key)
	}
	fixed, session = map[string]int64{}, map[string]int64{}
	times := map[string][]time.Time{}
	for i := range total {
		et, k := reduceCrashEvent(i, perRound), reduceCrashKey(i)
		start := et.Truncate(reduceCrashFixed)
		fixed[id("fixed", start, start.Add(reduceCrashFixed), k)]++
		times[k] = append(times[k], et)
	}
	for k, ts := range times {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		start, last, n := ts[0], ts[0], int64(0)
		for _, t := range ts {
			if t.After(last.Add(reduceCrashGap)) { // a message at exactly end touches: merged
				session[id("session", start, last.Add(reduceCrashGap), k)] = n
				start, n = t, 0
			}
			last = t
			n++
		}
		session[id("session", start, last.Add(reduceCrashGap), k)] = n
	}
	return fixed, session
}

// readResults reads a sink file: the count of each result ID, how many
// lines repeated an earlier result identically, and lines torn by a kill.
// A repeated ID with another count is an error.
func readResults(t *testing.T, file string) (results map[string]int64, dups, torn int) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	results = map[string]int64{}
	lines := strings.Split(string(b), "\n")
	for i, line := range lines {
		if line == "" {
			continue
		}
		id, count, ok := strings.Cut(line, " ")
		n, err := strconv.ParseInt(count, 10, 64)
		if !ok || err != nil {
			if i != len(lines)-1 && !strings.HasSuffix(line, "\n") {
				torn++ // a write the sink never acknowledged, cut by a kill
			}
			continue
		}
		if prev, seen := results[id]; seen {
			if prev != n {
				t.Errorf("%s: result %s emitted as %d and again as %d: not an identical re-emission", filepath.Base(file), id, prev, n)
			}
			dups++
			continue
		}
		results[id] = n
	}
	return results, dups, torn
}

func TestCrashDurableReduce(t *testing.T) {
	rounds, perRound := 40, int64(4_000) // 30 SIGKILL, 10 SIGTERM
	if n, err := strconv.Atoi(os.Getenv("RUNNEL_E2E_ROUNDS")); err == nil {
		rounds = n // for debugging only: the test asks for at least 10 kills
	}
	dir := t.TempDir()
	env := []string{"RUNNEL_E2E_PER_ROUND=" + strconv.FormatInt(perRound, 10)}
	start := time.Now()
	total, killed, stopped, finished := crashRounds(t, dir, "reduce-crash", rounds, perRound, 900*time.Millisecond, env...)

	wantFixed, wantSession := reduceCrashOracle(total, perRound)
	fixedFile, sessionFile := reduceCrashFiles(dir)
	for _, c := range []struct {
		file string
		want map[string]int64
	}{{fixedFile, wantFixed}, {sessionFile, wantSession}} {
		got, dups, torn := readResults(t, c.file)
		if !maps.Equal(got, c.want) {
			missing, wrong, extra := 0, 0, 0
			for id, n := range c.want {
				switch g, ok := got[id]; {
				case !ok:
					if missing < 3 {
						t.Errorf("%s: result %s (%d) never emitted", filepath.Base(c.file), id, n)
					}
					missing++
				case g != n:
					if wrong < 3 {
						t.Errorf("%s: result %s = %d, oracle %d", filepath.Base(c.file), id, g, n)
					}
					wrong++
				}
			}
			for id := range got {
				if _, ok := c.want[id]; !ok {
					if extra < 3 {
						t.Errorf("%s: result %s not in the oracle", filepath.Base(c.file), id)
					}
					extra++
				}
			}
			byHour := map[int64][2]int{}
			for id := range c.want {
				start, _ := strconv.ParseInt(strings.Split(strings.Split(id, "/")[1], "-")[0], 10, 64)
				h := (start - reduceCrashBase.UnixNano()) / int64(time.Hour)
				v := byHour[h]
				v[0]++
				if _, ok := got[id]; ok {
					v[1]++
				}
				byHour[h] = v
			}
			t.Logf("per round (want, got): %v", byHour)
			t.Fatalf("%s: %d results, oracle %d: %d missing, %d wrong, %d extra", filepath.Base(c.file), len(got), len(c.want), missing, wrong, extra)
		}
		t.Logf("%s: all %d (window, key) results equal the oracle; %d identical re-emissions, %d torn lines",
			filepath.Base(c.file), len(got), dups, torn)
	}
	t.Logf("%d rounds (%d SIGKILL, %d SIGTERM, %d drained before the signal) over %d ids in %v",
		rounds, killed, stopped, finished, total, time.Since(start).Round(time.Millisecond))
	assertDrained(t, dir)
}
