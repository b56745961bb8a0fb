package kafka

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-dev/runnel/internal/crashtest"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// The crash test: the cluster lives in the test process (it must survive
// its client), and a child process runs topic "in" -> source -> map ->
// sink -> topic "out" on durable storage (pipeline.MMap), connected to the
// cluster's address. Each round the parent adds ids to "in" and starts
// the child, which kills itself with SIGKILL once its sink has produced a
// random number of messages, just after a write and before the pipeline
// learns of it; a last run goes to the end of "in" (StopAtEnd) and exits.
// Every id must then be in "out" at least once; the duplicates are
// counted exactly, and each kill repeats at least the write it cut off.

const (
	crashBrokersEnv = "RUNNEL_KAFKA_CRASH_BROKERS"
	crashDirEnv     = "RUNNEL_KAFKA_CRASH_DIR"
	crashKillEnv    = "RUNNEL_KAFKA_CRASH_KILL_AT" // messages the sink produces before the kill; 0: none
	crashKeys       = 16
	// crashInstance is the static group instance ID of every child
	// (kgo.InstanceID), so that a child replaces the member of the child
	// it follows at once. Not for speed: a workaround of kfake, which can
	// keep a dynamic member killed while it waited for its JoinGroup
	// answer in the group forever, with partitions: kfake stops the
	// member's session timer while it waits in the join and restarts it
	// only when the answer is sent, and sending to the closed connection
	// fails half the time (group.reply, clientReq.reply select between
	// the buffered response channel and the connection's done). The
	// last child, the leader, then gave the dead members partitions and
	// waited for their records until its 2 minutes ran out (about 1 run
	// in 4). Kafka schedules every member's session expiry when it
	// completes the join, sent or not, so there a dead member holds its
	// partitions for a session timeout only; the source is not at fault.
	crashInstance = "crash-child"
)

// killSink produces through a Sink, and kills its own process once it
// has produced killAt messages.
type killSink struct {
	*Sink
	killAt  int64
	written atomic.Int64
	// killing is set by the one Write that kills: the vertex's
	// concurrent Writes can each pass killAt before the signal lands
	// (more likely since the sink reads batches of 2,000), and a second
	// kill line would make the round ambiguous.
	killing atomic.Bool
}

func (k *killSink) Write(ctx context.Context, msgs []vertex.Message[[]byte]) ([]vertex.Result, error) {
	res, err := k.Sink.Write(ctx, msgs)
	if err == nil && res == nil && k.killAt > 0 {
		if n := k.written.Add(int64(len(msgs))); n >= k.killAt && k.killing.CompareAndSwap(false, true) {
			crashtest.Printf("K %d", n)
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	return res, err
}

// crashChild runs the pipeline until the end of "in" ("D") or its kill.
func crashChild() {
	killAt, _ := strconv.ParseInt(os.Getenv(crashKillEnv), 10, 64)
	p, err := kafkaPipeline([]string{os.Getenv(crashBrokersEnv)}, "crash",
		[]kgo.Opt{kgo.InstanceID(crashInstance)},
		func(s *Sink) vertex.Sink[[]byte] { return &killSink{Sink: s, killAt: killAt} },
		pipeline.WithStorage(pipeline.MMap(os.Getenv(crashDirEnv))))
	if err != nil {
		crashtest.Fail("build: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.Run(ctx); err != nil {
		crashtest.Fail("run: %v", err)
	}
	crashtest.Printf("D")
}

func TestCrashDeliversAtLeastOnce(t *testing.T) {
	const rounds, perRound = 3, 4000
	c := newCluster(t, 4, "in", "out")
	cl := client(t, c)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 22))
	env := []string{crashBrokersEnv + "=" + c.ListenAddrs()[0], crashDirEnv + "=" + dir}
	total, kills := 0, 0
	for round := range rounds + 1 {
		last := round == rounds
		killAt := int64(0)
		if !last {
			produceIDs(t, cl, "in", total, total+perRound, crashKeys)
			total += perRound
			// Within what the round is sure to write: its own ids.
			killAt = int64(perRound/20 + rng.IntN(perRound*3/4))
		}
		child := crashtest.Start(t, "kafka-crash", append(env, crashKillEnv+"="+strconv.FormatInt(killAt, 10))...)
		if !child.Wait(2 * time.Minute) {
			t.Fatalf("round %d: the child did not end within 2 minutes; output %q", round, child.Lines())
		}
		recs := crashtest.Records(t, "round "+strconv.Itoa(round), child.Lines())
		if len(recs) != 1 {
			t.Fatalf("round %d: the child printed %q, want one line", round, child.Lines())
		}
		switch {
		case !last && recs[0][0] == "K":
			if ws := child.State().Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("round %d: the child ended with %v after its kill line", round, child.State())
			}
			kills++
			t.Logf("round %d: killed after producing %s messages (target %d)", round, recs[0][1], killAt)
		case last && recs[0][0] == "D":
		default:
			t.Fatalf("round %d: the child printed %q", round, child.Lines())
		}
	}
	out := readAll(t, c, "out")
	counts := countIDs(t, out, crashKeys)
	dups := 0
	for i := range total {
		n := counts["ID-"+strconv.Itoa(i)]
		if n == 0 {
			t.Fatalf("ID-%d never reached the output (of %d ids, %d records)", i, total, len(out))
		}
		dups += n - 1
	}
	if len(counts) != total {
		t.Fatalf("%d distinct values in the output, want the %d ids", len(counts), total)
	}
	if len(out) != total+dups {
		t.Fatalf("%d records for %d ids and %d duplicates", len(out), total, dups)
	}
	if dups < kills {
		t.Fatalf("%d duplicates after %d kills: each kill repeats at least the write it cut off", dups, kills)
	}
	t.Logf("%d ids through %d kills and a last run: %d records, %d duplicates (%.1f%%)",
		total, kills, len(out), dups, 100*float64(dups)/float64(total))
}
