package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
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

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// The crash test of reduce on durable storage: a child process runs
// topic source -> assign (keys from the id) -> reduce (fixed windows) and
// reduce (session windows) -> one sink each, on mmap storage with the
// reduce WAL. Each sink appends "id count pid" per result to its file and
// fsyncs before it returns. Every round the parent adds ids to the input
// topic and starts the child on the same directories, which kills itself
// with SIGKILL once it made a random share of the progress a round is sure
// to make (every fourth round SIGTERM: a clean stop, whose Stopped end
// keeps the open windows in the WAL; see crashplan_test.go and
// reduceCrashProgress). Only the final run
// ends by itself, once it drained the topic: its end of stream closes
// every window.
//
// The source gives each id its event time, and the watermark follows the
// event times (trailing them by reduceCrashDelay; the source keeps one per
// topic partition and its watermark is the lowest), so windows close
// during the runs and kills land between a window's results and its GC event. No
// message is late, so the oracle is exact (each round's ids also start at
// a window boundary past the previous round's windows, so that no window
// spans two rounds). The final set of (window, key) results
// must equal the oracle computed from the ids. A result written twice must
// be identical (the same count): from another process, it is a re-emission
// by the reduce (a kill lost the GC event of a window whose results were
// written), from the same one, a redelivery to the sink (a kill lost the
// sink's commit). Both are counted and logged.

const (
	reduceCrashKeys  = 40
	reduceCrashFixed = 100 * time.Millisecond // fixed window length
	reduceCrashGap   = 5 * time.Millisecond   // session gap
	// reduceCrashDelay is the watermark's MaxDelay: the source reads the
	// two partitions in turn, a batch (200, 20ms of event time) at a time,
	// so within a run their positions differ by what their commits did when
	// it started (each partition has its own watermark, so that gap never
	// makes anything late) and a few batches.
	reduceCrashDelay = 150 * time.Millisecond
)

// reduceCrashBase is the event time of the first id, within the WAL's time
// range.
var reduceCrashBase = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

// reduceCrashOffset is the event time of the i-th id of a round from the
// round's start: 50µs between ids, and a 10ms hole every 500 ids (which
// splits sessions; 2 topic partitions interleave them out of order).
func reduceCrashOffset(i int64) time.Duration {
	return time.Duration(i)*50*time.Microsecond + time.Duration(i/500)*10*time.Millisecond
}

// reduceCrashRound is the event time span of a round of perRound ids: past
// its last id's session end, rounded up to a fixed window, so that a
// round's windows (fixed and session) never reach into the next round's.
func reduceCrashRound(perRound int64) time.Duration {
	last := reduceCrashOffset(perRound-1) + reduceCrashGap
	return (last/reduceCrashFixed + 1) * reduceCrashFixed
}

// reduceCrashEvent is the event time of id, in rounds of perRound ids.
func reduceCrashEvent(id, perRound int64) time.Time {
	r, i := id/perRound, id%perRound
	return reduceCrashBase.Add(time.Duration(r)*reduceCrashRound(perRound) + reduceCrashOffset(i))
}

// eventTimedSource gives each id read from the topic its event time, so
// that the source's watermark follows the event times.
type eventTimedSource struct {
	*vertex.TopicSource[int64]
	perRound int64
}

func (s eventTimedSource) Read(ctx context.Context, max int) ([]vertex.Message[int64], error) {
	msgs, err := s.TopicSource.Read(ctx, max)
	for i := range msgs {
		msgs[i].EventTime = reduceCrashEvent(msgs[i].Value, s.perRound)
	}
	return msgs, err
}

func reduceCrashKey(id int64) string { return strconv.FormatInt(id%reduceCrashKeys, 10) }

// crashCount is a window's result: its count of distinct ids, how many
// ids it counted more than once (countExact only), and the process that
// computed it.
type crashCount struct {
	N    int64
	Dups int64
	PID  int
}

// crashResultSink writes "id count pid" per result to its file and fsyncs.
type crashResultSink struct {
	mu   sync.Mutex
	f    *os.File
	buf  []byte
	plan *crashPlan // told of the results once on disk, as progress
	name string     // the progress: "fixed results" or "session results"
}

func (s *crashResultSink) Write(_ context.Context, msgs []vertex.Message[vertex.Windowed[crashCount]]) ([]vertex.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = s.buf[:0]
	for _, m := range msgs {
		s.buf = fmt.Appendf(s.buf, "%s %d %d %d\n", m.ID, m.Value.Value.N, m.Value.Value.Dups, m.Value.Value.PID)
	}
	if _, err := s.f.Write(s.buf); err != nil {
		return nil, err
	}
	if err := s.f.Sync(); err != nil {
		return nil, err
	}
	if s.plan != nil {
		s.plan.progress(s.name, len(msgs))
	}
	return nil, nil
}

// reduceCrashProgress is what a round of the reduce crash child is sure to
// reach, and so may be killed on (see crashRounds):
//   - its two reduces add each of its perRound ids: a kill while they add;
//   - from the second round on, its fixed reduce emits at least one result
//     per key: the last fixed window of the previous round ends at the
//     previous round's span, which no earlier run's watermark reached
//     (it trails the event times by reduceCrashDelay), and this round's
//     watermark passes it. A kill between a window's results and its GC
//     event makes the reduce emit them again;
//   - from the second round on, its session reduce emits at least one
//     result per key likewise: the previous round's last session of each
//     key ends at the previous round's span.
//
// A non-final round never ends by itself, so a count it is sure to reach
// can be waited for.
func reduceCrashProgress(perRound int64) []crashProgress {
	return []crashProgress{{"added", 2 * perRound, 0}, {"fixed results", reduceCrashKeys, 1}, {"session results", reduceCrashKeys, 1}}
}

func reduceCrashFiles(dir string) (fixed, session string) {
	return filepath.Join(dir, "fixed.txt"), filepath.Join(dir, "session.txt")
}

// countDistinct counts the distinct ids of a window. The topic source
// delivers at least once: a kill makes it send again what it had not
// committed (the map after it writes nothing twice, but cannot tell a
// message handed over again from a new one), and a plain count would count
// those duplicates, which are no fault of the reduce. Counting distinct ids makes
// the oracle exact while still catching every lost or extra id. The result
// carries the pid of the process that computed it. Each id added is
// progress of the child's crash plan (see reduceCrashProgress).
func countDistinct(plan *crashPlan) vertex.Aggregator[int64, map[int64]struct{}, crashCount] {
	return vertex.Aggregator[int64, map[int64]struct{}, crashCount]{
		Create: func() map[int64]struct{} { return map[int64]struct{}{} },
		Add: func(acc map[int64]struct{}, m vertex.Message[int64]) map[int64]struct{} {
			acc[m.Value] = struct{}{}
			plan.progress("added", 1)
			return acc
		},
		Merge: func(a, b map[int64]struct{}) map[int64]struct{} {
			maps.Copy(a, b)
			return a
		},
		Result: func(acc map[int64]struct{}) crashCount { return crashCount{N: int64(len(acc)), PID: os.Getpid()} },
	}
}

// countExact counts the ids of a window with their multiplicity: N is the
// number of distinct ids, Dups how many times an id was added again. With
// a resumable source feeding the reduce directly, every input is counted
// exactly once across crashes, so Dups must be 0. Each id added is
// progress of the child's crash plan.
func countExact(plan *crashPlan) vertex.Aggregator[int64, map[int64]int64, crashCount] {
	return vertex.Aggregator[int64, map[int64]int64, crashCount]{
		Create: func() map[int64]int64 { return map[int64]int64{} },
		Add: func(acc map[int64]int64, m vertex.Message[int64]) map[int64]int64 {
			acc[m.Value]++
			plan.progress("added", 1)
			return acc
		},
		Merge: func(a, b map[int64]int64) map[int64]int64 {
			for id, n := range b {
				a[id] += n
			}
			return a
		},
		Result: func(acc map[int64]int64) crashCount {
			c := crashCount{N: int64(len(acc)), PID: os.Getpid()}
			for _, n := range acc {
				c.Dups += n - 1
			}
			return c
		},
	}
}

// reduceCrashChild runs the pipeline until the input topic is drained
// (exit 0), SIGTERM (a clean stop, exit 0) or SIGKILL. With
// RUNNEL_E2E_SOURCE=generator it runs the generator variant instead.
func reduceCrashChild() int {
	switch os.Getenv(reduceCrashSourceEnv) {
	case "generator":
		return reduceCrashGenChild()
	case "generator-map":
		return reduceCrashGenMapChild()
	}
	dir := os.Getenv("RUNNEL_E2E_DIR")
	perRound, _ := strconv.ParseInt(os.Getenv("RUNNEL_E2E_PER_ROUND"), 10, 64)
	topic, err := openCrashInput(dir)
	if err != nil {
		return childFail("open input: %v", err)
	}
	defer topic.Close()
	// Only the final run ends when the topic is drained; the others run
	// until their signal, so that every round but the SIGTERM ones is
	// killed, and the windows of a round close only as the watermark
	// passes them.
	ts := vertex.FromTopic(topic, crashSourceName)
	if os.Getenv("RUNNEL_E2E_FINAL") != "" {
		ts.EndWhenEmpty()
	}
	src := eventTimedSource{ts, perRound}
	plan := crashPlanFromEnv()
	return runReduceCrash(dir, plan, countDistinct(plan), func(p *pipeline.Pipeline) pipeline.Stream[int64] {
		ids := pipeline.Source(p, "ids", src, vertex.BatchSize(200))
		return pipeline.FlatMap(p, "assign", ids, func(_ context.Context, m vertex.Message[int64]) ([]vertex.Message[int64], error) {
			return []vertex.Message[int64]{{ID: m.ID, Keys: []string{reduceCrashKey(m.Value)}, EventTime: m.EventTime, Value: m.Value}}, nil
		}, vertex.BatchSize(200), vertex.BufferCapacity(5000))
	})
}

// runReduceCrash runs the reduce crash pipeline: the keyed, event-timed
// stream input builds, into a fixed-window and a session-window reduce of
// agg (2 replicas each), whose results go to the sink files and whose late
// messages go to late.txt; plan is told of the fixed results written. It
// returns the child's exit code.
func runReduceCrash[S any](dir string, plan *crashPlan, agg vertex.Aggregator[int64, S, crashCount], input func(*pipeline.Pipeline) pipeline.Stream[int64]) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
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
	sinks[0].plan, sinks[0].name = plan, "fixed results"
	sinks[1].plan, sinks[1].name = plan, "session results"
	popts := []pipeline.Option{pipeline.WithStorage(pipeline.MMap(data)), pipeline.Watermarks(pipeline.WatermarkConfig{MaxDelay: reduceCrashDelay})}
	if os.Getenv("RUNNEL_E2E_LOG") != "" { // for debugging: the pipeline's log on stderr
		l, _ := zap.NewDevelopment()
		popts = append(popts, pipeline.WithLogger(l))
	}
	p := pipeline.New("crash", popts...)
	in := input(p)
	fixed, fixedLate := pipeline.Reduce(p, "fixed", in, vertex.Fixed(reduceCrashFixed), agg,
		vertex.Replicas(2), vertex.BatchSize(200), vertex.BufferCapacity(5000))
	sessions, sessionLate := pipeline.Reduce(p, "session", in, vertex.Session(reduceCrashGap), agg,
		vertex.Replicas(2), vertex.BatchSize(200), vertex.BufferCapacity(5000))
	// The late streams go to a file: a late message can only be a
	// duplicate (the topic source sends again what a kill kept it from
	// committing), since a late id never counted fails the oracle.
	lf, err := os.OpenFile(filepath.Join(dir, "late.txt"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return childFail("open late file: %v", err)
	}
	defer lf.Close()
	var lateMu sync.Mutex
	lateSink := func(name string) vertex.Sink[int64] {
		return vertex.Func(func(_ context.Context, ms []vertex.Message[int64]) error {
			lateMu.Lock()
			defer lateMu.Unlock()
			var b []byte
			for _, m := range ms {
				b = fmt.Appendf(b, "%s id %d at %v\n", name, m.Value, m.EventTime.Sub(reduceCrashBase))
			}
			_, err := lf.Write(b)
			return err
		})
	}
	pipeline.Sink(p, "fixed-late", fixedLate, lateSink("fixed"))
	pipeline.Sink(p, "session-late", sessionLate, lateSink("session"))
	pipeline.Sink(p, "fixed-out", fixed, sinks[0], vertex.BatchSize(100))
	pipeline.Sink(p, "session-out", sessions, sinks[1], vertex.BatchSize(100))
	if err := p.Run(ctx); err != nil {
		return childFail("run: %v", err)
	}
	fmt.Fprintln(os.Stdout, "D")
	return 0
}

// reduceCrashOracle computes every (window, key) result of ids [0, total)
// by result ID, for both reduce vertices, the key of each id given by key.
func reduceCrashOracle(total, perRound int64, key func(int64) string) (fixed, session map[string]int64) {
	id := func(v string, start, end time.Time, key string) string {
		return fmt.Sprintf("%s/%d-%d/%s", v, start.UnixNano(), end.UnixNano(), key)
	}
	fixed, session = map[string]int64{}, map[string]int64{}
	times := map[string][]time.Time{}
	for i := range total {
		et, k := reduceCrashEvent(i, perRound), key(i)
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

// readLate returns the lines of the late messages' file.
func readLate(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "late.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(strings.Split(string(b), "\n"), func(l string) bool { return l == "" })
}

// crashResults is what a sink file holds.
type crashResults struct {
	counts map[string]int64 // the count of each result ID
	// dups is, per result ID, how many of its inputs it counted more than
	// once (results of countExact; absent: none).
	dups map[string]int64
	// reemitted counts lines that repeat an earlier result identically from
	// another process: re-emissions by the reduce after a lost GC event;
	// redelivered those from the same process: redeliveries to the sink
	// after a lost commit.
	reemitted, redelivered int
	torn                   int // lines torn by a kill
	// byPID counts the results (first emissions) each process wrote.
	byPID map[string]int
}

// readResults reads a sink file. A repeated ID with another count is an
// error: a re-emission must be identical.
func readResults(t *testing.T, file string) crashResults {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	r := crashResults{counts: map[string]int64{}, dups: map[string]int64{}, byPID: map[string]int{}}
	pids := map[string]string{}
	lines := strings.Split(string(b), "\n")
	for _, line := range lines {
		if line == "" {
			continue
		}
		// "id count dups pid"
		f := strings.Fields(line)
		var n, d int64
		if len(f) == 4 {
			n, err = strconv.ParseInt(f[1], 10, 64)
			if err == nil {
				d, err = strconv.ParseInt(f[2], 10, 64)
			}
		}
		if len(f) != 4 || err != nil {
			r.torn++ // a write the sink never acknowledged, cut by a kill
			continue
		}
		id, pid := f[0], f[3]
		if prev, seen := r.counts[id]; seen {
			if prev != n || r.dups[id] != d {
				t.Errorf("%s: result %s emitted as %d (%d counted twice) and again as %d (%d): not an identical re-emission", filepath.Base(file), id, prev, r.dups[id], n, d)
			}
			if pid != pids[id] {
				r.reemitted++
			} else {
				r.redelivered++
			}
			continue
		}
		r.counts[id], pids[id] = n, pid
		if d != 0 {
			r.dups[id] = d
		}
		r.byPID[pid]++
	}
	return r
}

func TestCrashDurableReduce(t *testing.T) {
	rounds, perRound := underRace(44, 24), int64(4_000) // 33 SIGKILL and 11 SIGTERM (18 and 6 under -race)
	if n, err := strconv.Atoi(os.Getenv("RUNNEL_E2E_ROUNDS")); err == nil {
		rounds = n // for debugging only: the test asks for at least 10 kills
	}
	dir := t.TempDir()
	// Two input partitions (crashTopicParts), read in turn by one
	// consumer: after a kill each resumes from its own commit, and the
	// commits drift apart over the rounds (by 1200 offsets, 190ms of event
	// time, in one run), more than reduceCrashDelay. The source keeps a
	// watermark per partition, the lowest of which is its watermark, so
	// the partition left behind is never judged on the one ahead.
	env := []string{"RUNNEL_E2E_PER_ROUND=" + strconv.FormatInt(perRound, 10)}
	start := time.Now()
	total, killed, stopped := crashRounds(t, dir, "reduce-crash", rounds, perRound, reduceCrashProgress(perRound), env...)
	lateLines := readLate(t, dir)
	t.Logf("%d late messages (duplicates: the oracle check below fails on a late id never counted): %q", len(lateLines), lateLines[:min(len(lateLines), 5)])
	wantFixed, wantSession := reduceCrashOracle(total, perRound, reduceCrashKey)
	reemitted, _ := checkCrashResults(t, dir, wantFixed, wantSession)
	t.Logf("%d rounds (%d SIGKILL, %d SIGTERM, each mid-run) over %d ids in %v; %d re-emissions by the reduce in all",
		rounds, killed, stopped, total, time.Since(start).Round(time.Millisecond), reemitted)
	assertDrained(t, dir)
}

// checkCrashResults compares the results in the sink files with the
// oracle's (window, key) counts of distinct ids; every result must be
// emitted, with the oracle's count, and nothing else. It returns the
// re-emissions by the reduce, and per sink file (fixed, session) how many
// inputs were counted more than once and in how many results.
func checkCrashResults(t *testing.T, dir string, wantFixed, wantSession map[string]int64) (reemitted int, dups [2][2]int64) {
	t.Helper()
	fixedFile, sessionFile := reduceCrashFiles(dir)
	for i, c := range []struct {
		file string
		want map[string]int64
	}{{fixedFile, wantFixed}, {sessionFile, wantSession}} {
		res := readResults(t, c.file)
		got := res.counts
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
		t.Logf("%s: all %d (window, key) results equal the oracle, first emitted by %d processes; %d identical re-emissions by the reduce, %d redeliveries to the sink, %d torn lines",
			filepath.Base(c.file), len(got), len(res.byPID), res.reemitted, res.redelivered, res.torn)
		// The watermark closes windows during the killed runs, not only at
		// the final run's end of stream (a watermark held back, by a
		// partition or anything else, would leave it all to the final run).
		if len(res.byPID) < 2 {
			t.Errorf("%s: every result came from one process: no window closed before the final run", filepath.Base(c.file))
		}
		reemitted += res.reemitted
		for _, d := range res.dups {
			dups[i][0] += d
			dups[i][1]++
		}
	}
	return reemitted, dups
}

// The generator variant of the reduce crash test: a resumable source (the
// generator, 2 replicas, its ids keyed and event-timed as the topic
// variant's) feeds both reduce vertices directly, so every input must be
// counted exactly once in its windows across the crashes (countExact): a
// kill between the generator's write of a batch and the save of its
// position once made it hand the batch over again under new buffer
// offsets, which the reduce counted again.

// reduceCrashSourceEnv selects the reduce crash child's source.
const reduceCrashSourceEnv = "RUNNEL_E2E_SOURCE"

// roundGenerator is the generator of one round: Count is every id added to
// the input topic so far, and a run that is not the final one turns the
// generator's end into idle reads, so that it runs until its signal and
// only the final run's end of stream closes every window.
type roundGenerator struct {
	*vertex.GeneratorSource[int64]
	final  bool
	onIdle func() // called on each idle read (nil: nothing)
}

func newRoundGenerator(total, perRound int64, final bool) roundGenerator {
	return roundGenerator{vertex.Generator(func(i int64) int64 { return i }).WithCount(total).WithKeys(reduceCrashKeys).
		WithEventTime(func(i int64) time.Time { return reduceCrashEvent(i, perRound) }), final, nil}
}

func (g roundGenerator) ReadInto(ctx context.Context, buf []vertex.Message[int64]) (int, error) {
	n, err := g.GeneratorSource.ReadInto(ctx, buf)
	if !errors.Is(err, io.EOF) || g.final {
		return n, err
	}
	if g.onIdle != nil {
		g.onIdle()
	}
	select { // idle until the signal
	case <-ctx.Done():
		return n, ctx.Err()
	case <-time.After(10 * time.Millisecond):
		return n, nil
	}
}

func (g roundGenerator) Read(ctx context.Context, maxN int) ([]vertex.Message[int64], error) {
	buf := make([]vertex.Message[int64], maxN)
	n, err := g.ReadInto(ctx, buf)
	return buf[:n:n], err
}

// genCrashKey is the key the generator gives id (vertex.GeneratorSource.WithKeys).
func genCrashKey(id int64) string { return "k" + strconv.FormatInt(id%reduceCrashKeys, 10) }

// reduceCrashGenChild runs generator -> reduces until the generator has
// made every id of the input topic (final run), SIGTERM or SIGKILL.
func reduceCrashGenChild() int {
	dir := os.Getenv("RUNNEL_E2E_DIR")
	perRound, _ := strconv.ParseInt(os.Getenv("RUNNEL_E2E_PER_ROUND"), 10, 64)
	topic, err := openCrashInput(dir)
	if err != nil {
		return childFail("open input: %v", err)
	}
	// The topic only counts the ids of the rounds so far: no group reads
	// it, so Pending is everything it holds.
	total := topic.Pending("nobody")
	if err := topic.Close(); err != nil {
		return childFail("close input: %v", err)
	}
	src := newRoundGenerator(total, perRound, os.Getenv("RUNNEL_E2E_FINAL") != "")
	plan := crashPlanFromEnv()
	src.onIdle = plan.idle
	return runReduceCrash(dir, plan, countExact(plan), func(p *pipeline.Pipeline) pipeline.Stream[int64] {
		return pipeline.Source(p, "ids", src, vertex.Replicas(2), vertex.BatchSize(200))
	})
}

func TestCrashDurableReduceGenerator(t *testing.T) {
	rounds, perRound := underRace(24, 16), int64(4_000) // 18 SIGKILL and 6 SIGTERM (12 and 4 under -race)
	if n, err := strconv.Atoi(os.Getenv("RUNNEL_E2E_ROUNDS")); err == nil {
		rounds = n // for debugging only: the test asks for at least 10 kills
	}
	dir := t.TempDir()
	env := []string{"RUNNEL_E2E_PER_ROUND=" + strconv.FormatInt(perRound, 10), reduceCrashSourceEnv + "=generator"}
	start := time.Now()
	total, killed, stopped := crashRounds(t, dir, "reduce-crash", rounds, perRound, reduceCrashProgress(perRound), env...)

	wantFixed, wantSession := reduceCrashOracle(total, perRound, genCrashKey)
	reemitted, dups := checkCrashResults(t, dir, wantFixed, wantSession)
	// A late message is one the generator handed over twice (a first copy
	// closed its window): none, as none is counted twice.
	if late := readLate(t, dir); len(late) > 0 {
		t.Errorf("%d late messages, want 0: %q", len(late), late[:min(len(late), 5)])
	}
	for i, name := range []string{"fixed", "session"} {
		if dups[i][0] > 0 {
			t.Errorf("%s: %d inputs counted more than once, in %d of %d results", name, dups[i][0], dups[i][1], len(wantFixed)*(1-i)+len(wantSession)*i)
		}
	}
	t.Logf("%d rounds (%d SIGKILL, %d SIGTERM, each mid-run) over %d ids in %v; %d re-emissions by the reduce in all",
		rounds, killed, stopped, total, time.Since(start).Round(time.Millisecond), reemitted)
}
