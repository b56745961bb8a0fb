package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
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

	"github.com/runnel-dev/runnel/internal/crashtest"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/mmap"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/watermark"
)

// The crash test of a durable pipeline: a child process runs
// topic source -> map -> sink on mmap storage, the sink appending every id
// it is given to a file it fsyncs before it returns. The parent adds ids
// to the source topic and starts the child, which kills itself with
// SIGKILL once its sink wrote a random share of the round's ids (or stops
// itself with SIGTERM, a clean drain, every fourth round; see
// crashplan_test.go), then starts it again on the same directories. At the
// end the child runs until the topic is drained. Every id the topic held
// must be in the sink's file at least once; duplicates (redelivered
// in-flight messages) are counted and reported.

const (
	crashTopicParts = 2
	crashSourceName = "crash-src" // the source's group in the input topic
)

// crashDirs are the input topic's and the pipeline's directories, and the
// sink's file, under dir.
func crashDirs(dir string) (input, data, sinkFile string) {
	return filepath.Join(dir, "input"), filepath.Join(dir, "data"), filepath.Join(dir, "sink.txt")
}

// openCrashInput opens the input topic: crashTopicParts partitions, or as
// many as RUNNEL_E2E_TOPIC_PARTS says (set for the parent and its child).
func openCrashInput(dir string) (*isb.Topic[int64], error) {
	input, _, _ := crashDirs(dir)
	parts := crashTopicParts
	if n, err := strconv.Atoi(os.Getenv(crashTopicPartsEnv)); err == nil {
		parts = n
	}
	return mmap.NewTopic[int64](input, "ids", mmap.Topic(isb.Partitions(parts)))
}

// crashTopicPartsEnv overrides crashTopicParts.
const crashTopicPartsEnv = "RUNNEL_E2E_TOPIC_PARTS"

// fileSink appends each message's value as a line to a file and fsyncs it
// before Write returns: what Write acknowledged is on disk.
type fileSink struct {
	mu   sync.Mutex
	f    *os.File
	buf  []byte
	plan *crashPlan // told of every write once it is on disk
	// beforeWrite, when set, runs at the start of each Write (the
	// end-of-stream restart test slows the sink down with it).
	beforeWrite func()
}

func (s *fileSink) Write(_ context.Context, msgs []vertex.Message[string]) ([]vertex.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.beforeWrite != nil {
		s.beforeWrite()
	}
	s.buf = s.buf[:0]
	for _, m := range msgs {
		s.buf = append(s.buf, m.Value...)
		s.buf = append(s.buf, '\n')
	}
	if _, err := s.f.Write(s.buf); err != nil {
		return nil, err
	}
	if err := s.f.Sync(); err != nil {
		return nil, err
	}
	s.plan.progress("written", len(msgs))
	return nil, nil
}

// crashChild runs the pipeline until the input topic is drained (exit 0),
// SIGTERM (a clean stop, exit 0) or SIGKILL.
func crashChild() int {
	dir := os.Getenv("RUNNEL_E2E_DIR")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	topic, err := openCrashInput(dir)
	if err != nil {
		return childFail("open input: %v", err)
	}
	defer topic.Close()
	_, data, sinkFile := crashDirs(dir)
	f, err := os.OpenFile(sinkFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return childFail("open sink file: %v", err)
	}
	defer f.Close()
	p := pipeline.New("crash", pipeline.WithStorage(pipeline.MMap(data)))
	ids := pipeline.Source(p, "ids", vertex.FromTopic(topic, crashSourceName).EndWhenEmpty(),
		vertex.BatchSize(200))
	formatted := pipeline.Map(p, "format", ids, func(_ context.Context, v int64) (string, error) {
		return strconv.FormatInt(v, 10), nil
	}, vertex.Replicas(2), vertex.BatchSize(100), vertex.BufferCapacity(5000))
	sink := &fileSink{f: f, plan: crashPlanFromEnv()}
	if os.Getenv("RUNNEL_E2E_SLOW_SINK") != "" {
		// A slow sink that kills its own process (SIGKILL) once the source
		// has handed every id of the topic to the first buffer (its group
		// committed them all) and ended: the sink has not ended then.
		sink.beforeWrite = func() {
			if topic.Pending(crashSourceName) == 0 && p.Stats()[0].Watermark.Equal(watermark.Max) {
				fmt.Fprintln(os.Stdout, "X")
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	pipeline.Sink(p, "file", formatted, sink, vertex.BatchSize(150), vertex.BufferCapacity(5000))
	if err := p.Run(ctx); err != nil {
		return childFail("run: %v", err)
	}
	fmt.Fprintln(os.Stdout, "D")
	return 0
}

// addIDs appends ids [from, to) to the input topic (the child is not
// running: the topic's lock is free).
func addIDs(t *testing.T, dir string, from, to int64) {
	t.Helper()
	topic, err := openCrashInput(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, 0, to-from)
	for i := from; i < to; i++ {
		ids = append(ids, i)
	}
	if err := topic.Producer(nil).ProduceBatch(context.Background(), ids); err != nil {
		t.Fatal(err)
	}
	if err := topic.Close(); err != nil {
		t.Fatal(err)
	}
}

// startChild starts the crash child on dir.
func startChild(t *testing.T, dir string) *crashtest.Child {
	t.Helper()
	return startChildOf(t, dir, "crash")
}

// startChildOf is startChild for the child named kind, with env added.
func startChildOf(t *testing.T, dir, kind string, env ...string) *crashtest.Child {
	t.Helper()
	return crashtest.Start(t, kind, append([]string{"RUNNEL_E2E_DIR=" + dir}, env...)...)
}

// crashRounds runs the child named kind on dir for rounds rounds, adding
// perRound ids to the input topic before each. Three rounds in four end by
// SIGKILL, the fourth by SIGTERM (a clean drain), which the child sends
// itself once one of its progress counts, drawn at random among progress,
// reaches a target drawn at random between 5% and 95% of what the child is
// sure to reach of it in a round. A last run then drains the topic and must
// end by itself. It returns the number of ids added and how many rounds
// were killed and stopped.
func crashRounds(t *testing.T, dir, kind string, rounds int, perRound int64, progress []crashProgress, env ...string) (total int64, killed, stopped int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for round := range rounds {
		addIDs(t, dir, total, total+perRound)
		total += perRound
		clean := round%4 == 3
		sig := "KILL"
		if clean {
			sig = "TERM"
		}
		// Rounds 1..len(progress) signal on each kind of progress in turn
		// (where the round may), so that every kind ends a round at least
		// once: the results checks need a round killed while emitting
		// (a window closed before the final run), which a random choice
		// left to chance. The later rounds choose at random.
		var on crashProgress
		if k := round - 1; k >= 0 && k < len(progress) && round >= progress[k].fromRound {
			on = progress[k]
		}
		for on.work == 0 || round < on.fromRound {
			on = progress[rng.IntN(len(progress))]
		}
		at := max(1, on.work/20+rng.Int64N(on.work*9/10))
		child := startChildOf(t, dir, kind, append(slices.Clip(env),
			crashOnEnv+"="+on.name, crashAtEnv+"="+strconv.FormatInt(at, 10), crashSignalEnv+"="+sig)...)
		if !child.Wait(2 * time.Minute) {
			t.Fatalf("round %d: the child did not reach progress %d and signal itself within 2 minutes; output %q", round, at, child.Lines())
		}
		out, state := child.Lines(), child.State()
		for _, line := range out {
			if strings.HasPrefix(line, "E ") {
				t.Fatalf("round %d: child failed: %s", round, line)
			}
		}
		if slices.ContainsFunc(out, func(l string) bool { return strings.HasPrefix(l, "K ") && strings.HasSuffix(l, " idle") }) {
			t.Logf("round %d: %q could not reach %d this round; the child signalled itself once idle (crashPlan.idle)", round, on.name, at)
		}
		if !slices.ContainsFunc(out, func(l string) bool { return strings.HasPrefix(l, "K ") }) {
			t.Fatalf("round %d: the child ended (%v) before its progress %q reached %d of %d: it was not signalled mid-run; output %q",
				round, state, on.name, at, on.work, out)
		}
		if clean {
			if code := state.ExitCode(); code != 0 || out[len(out)-1] != "D" {
				t.Fatalf("round %d: a child stopped by SIGTERM exited with %v, output %q", round, state, out)
			}
			stopped++
			continue
		}
		if ws, ok := state.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: the child was to be killed mid-run, but it ended with %v", round, state)
		}
		killed++
	}
	// The last run drains the topic and ends by itself (told so by
	// RUNNEL_E2E_FINAL, for a child whose rounds do not end by themselves).
	child := startChildOf(t, dir, kind, append(slices.Clip(env), "RUNNEL_E2E_FINAL=1")...)
	if !child.Wait(3 * time.Minute) {
		t.Fatal("the final run did not drain the topic")
	}
	if out, code := child.Lines(), child.State().ExitCode(); code != 0 || len(out) == 0 || out[len(out)-1] != "D" {
		t.Fatalf("final run: exit %d, output %q", code, out)
	}
	return total, killed, stopped
}

func TestCrashDurablePipeline(t *testing.T) {
	rounds, perRound := underRace(24, 16), int64(20_000)
	if testing.Short() {
		rounds, perRound = 16, 10_000
	}
	dir := t.TempDir()
	start := time.Now()
	total, killed, stopped := crashRounds(t, dir, "crash", rounds, perRound, []crashProgress{{"written", perRound, 0}})

	counts, torn := readSinkFile(t, dir)
	var missing, dups int64
	for id := range total {
		switch c := counts[id]; {
		case c == 0:
			if missing < 5 {
				t.Errorf("id %d never reached the sink", id)
			}
			missing++
		case c > 1:
			dups += int64(c - 1)
		}
	}
	for id := range counts {
		if id < 0 || id >= total {
			t.Errorf("the sink got id %d, which the topic never held", id)
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d ids lost", missing, total)
	}
	t.Logf("%d rounds (%d SIGKILL, %d SIGTERM, each mid-run) in %v: all %d ids delivered, %d duplicates (%.2f%%), %d torn lines",
		rounds, killed, stopped, time.Since(start).Round(time.Millisecond), total, dups, 100*float64(dups)/float64(total), torn)
	assertDrained(t, dir)
}

// readSinkFile counts the ids in the sink's file. A line cut by a kill
// (a write the sink never acknowledged) is counted as torn, not as an id.
func readSinkFile(t *testing.T, dir string) (map[int64]int, int) {
	t.Helper()
	_, _, sinkFile := crashDirs(dir)
	b, err := os.ReadFile(sinkFile)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[int64]int{}
	torn := 0
	for line := range strings.SplitSeq(string(b), "\n") {
		if line == "" {
			continue
		}
		id, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			torn++
			continue
		}
		counts[id]++
	}
	return counts, torn
}

// assertDrained checks the input topic's group committed everything.
func assertDrained(t *testing.T, dir string) {
	t.Helper()
	topic, err := openCrashInput(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer topic.Close()
	if p := topic.Pending(crashSourceName); p != 0 {
		t.Errorf("the input topic's group has %d uncommitted items after the final run", p)
	}
}

// TestDurablePipelineEndsAfterKillPastSourceEnd: a durable pipeline is
// killed (SIGKILL, by its own slow sink) after its bounded source ended and
// handed every id to the first buffer, but before the sink ended. Started
// again on the same directories, it finishes by itself through end-of-stream
// messages (the exhausted source ends again at once) and every id reaches
// the sink.
func TestDurablePipelineEndsAfterKillPastSourceEnd(t *testing.T) {
	const total = 6000 // fits in the buffers, so the source ends while the sink is slow
	dir := t.TempDir()
	addIDs(t, dir, 0, total)
	child := startChildOf(t, dir, "crash", "RUNNEL_E2E_SLOW_SINK=1")
	if !child.Wait(3 * time.Minute) {
		t.Fatal("the slow child did not end")
	}
	if !slices.Contains(child.Lines(), "X") || child.State().ExitCode() != -1 {
		t.Fatalf("the slow child was not killed past its source's end: state %v, output %q", child.State(), child.Lines())
	}
	before, _ := readSinkFile(t, dir)
	if len(before) >= total {
		t.Fatalf("the sink had all %d ids before the kill: the test killed nothing in flight", len(before))
	}

	child = startChild(t, dir)
	if !child.Wait(3 * time.Minute) {
		t.Fatal("the restarted pipeline did not end by itself")
	}
	if out, code := child.Lines(), child.State().ExitCode(); code != 0 || len(out) == 0 || out[len(out)-1] != "D" {
		t.Fatalf("restart: exit %d, output %q", code, out)
	}
	after, _ := readSinkFile(t, dir)
	for id := range int64(total) {
		if after[id] == 0 {
			t.Fatalf("id %d never reached the sink (%d of %d had before the kill)", id, len(before), total)
		}
	}
	t.Logf("killed with %d of %d ids in the sink; the restart delivered the rest and ended by itself", len(before), total)
	assertDrained(t, dir)
}
