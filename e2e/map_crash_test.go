package e2e

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// The map variant of the generator reduce crash test: the generator (2
// replicas) feeds a FlatMap that turns each id into two values, 2*id and
// 2*id+1 (same ID, keys and event time, as vertex.Derive makes them), and
// the FlatMap feeds both reduce vertices. Every input must be counted
// exactly once in its windows across the crashes (countExact): a kill
// between the map's write of a batch's outputs and the durable commit of
// its input once made it map the batch again after the restart and write
// both outputs again under new offsets of the reduce's buffer, which the
// reduce counted again. Two outputs per input make the output index
// matter: a kill between them leaves the first written and not the second.

// mapCrashReplicasEnv sets the FlatMap's replicas (default 1).
const mapCrashReplicasEnv = "RUNNEL_E2E_MAP_REPLICAS"

// splitValues is the FlatMap of the map variant: two outputs per input.
func splitValues(_ context.Context, m vertex.Message[int64]) ([]vertex.Message[int64], error) {
	return []vertex.Message[int64]{vertex.Derive(m, 2*m.Value), vertex.Derive(m, 2*m.Value+1)}, nil
}

// reduceCrashGenMapChild runs generator -> split -> reduces until the
// generator has made every id of the input topic (final run), SIGTERM or
// SIGKILL.
func reduceCrashGenMapChild() int {
	dir := os.Getenv("RUNNEL_E2E_DIR")
	perRound, _ := strconv.ParseInt(os.Getenv("RUNNEL_E2E_PER_ROUND"), 10, 64)
	replicas, _ := strconv.Atoi(os.Getenv(mapCrashReplicasEnv))
	topic, err := openCrashInput(dir)
	if err != nil {
		return childFail("open input: %v", err)
	}
	total := topic.Pending("nobody") // see reduceCrashGenChild
	if err := topic.Close(); err != nil {
		return childFail("close input: %v", err)
	}
	src := newRoundGenerator(total, perRound, os.Getenv("RUNNEL_E2E_FINAL") != "")
	plan := crashPlanFromEnv()
	src.onIdle = plan.idle
	return runReduceCrash(dir, plan, countExact(plan), func(p *pipeline.Pipeline) pipeline.Stream[int64] {
		ids := pipeline.Source(p, "ids", src, vertex.Replicas(2), vertex.BatchSize(200))
		return pipeline.FlatMap(p, "split", ids, splitValues,
			vertex.Replicas(max(1, replicas)), vertex.Partitions(2), vertex.BatchSize(200), vertex.BufferCapacity(5000))
	})
}

// mapCrashProgress is reduceCrashProgress for two values per id: each
// reduce adds 2*perRound values a round.
func mapCrashProgress(perRound int64) []crashProgress {
	return []crashProgress{{"added", 4 * perRound, 0}, {"fixed results", reduceCrashKeys, 1}, {"session results", reduceCrashKeys, 1}}
}

func TestCrashDurableMapReduceGenerator(t *testing.T) {
	testCrashMapReduce(t, 1)
}

func TestCrashDurableMapReplicasReduceGenerator(t *testing.T) {
	testCrashMapReduce(t, 2)
}

func testCrashMapReduce(t *testing.T, replicas int) {
	rounds, perRound := underRace(24, 16), int64(4_000) // 18 SIGKILL and 6 SIGTERM (12 and 4 under -race)
	if n, err := strconv.Atoi(os.Getenv("RUNNEL_E2E_ROUNDS")); err == nil {
		rounds = n // for debugging only
	}
	dir := t.TempDir()
	env := []string{"RUNNEL_E2E_PER_ROUND=" + strconv.FormatInt(perRound, 10), reduceCrashSourceEnv + "=generator-map",
		mapCrashReplicasEnv + "=" + strconv.Itoa(replicas)}
	start := time.Now()
	total, killed, stopped := crashRounds(t, dir, "reduce-crash", rounds, perRound, mapCrashProgress(perRound), env...)

	wantFixed, wantSession := reduceCrashOracle(total, perRound, genCrashKey)
	for _, want := range []map[string]int64{wantFixed, wantSession} {
		for id := range want {
			want[id] *= 2 // two values per id, of the id's key and event time
		}
	}
	reemitted, dups := checkCrashResults(t, dir, wantFixed, wantSession)
	if late := readLate(t, dir); len(late) > 0 {
		t.Errorf("%d late messages, want 0: %q", len(late), late[:min(len(late), 5)])
	}
	for i, name := range []string{"fixed", "session"} {
		if dups[i][0] > 0 {
			t.Errorf("%s: %d values counted more than once, in %d of %d results", name, dups[i][0], dups[i][1], len(wantFixed)*(1-i)+len(wantSession)*i)
		}
	}
	t.Logf("%d rounds (%d SIGKILL, %d SIGTERM, each mid-run) over %d ids (%d values) in %v; %d re-emissions by the reduce in all",
		rounds, killed, stopped, total, 2*total, time.Since(start).Round(time.Millisecond), reemitted)
}
