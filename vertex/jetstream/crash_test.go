package jetstream

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/runnel-dev/runnel/internal/crashtest"
	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// The crash test: the server lives in the test process (it must survive
// its client), and a child process runs stream "in" -> source -> map ->
// sink -> stream "out" on durable storage (pipeline.MMap), connected to
// the server's URL. Each round the parent adds ids to "in" and starts
// the child, which kills itself with SIGKILL once its sink has written a
// random number of messages, just after a write and before the pipeline
// learns of it; a last run goes to the end of "in" (StopAtEnd) and exits.
// Every id must then be in "out" at least once; the repetitions are
// counted exactly: those the stream stored twice (none expected: the
// sink's Nats-Msg-Id is the source's stable ID) and those its duplicate
// window dropped (each kill repeats at least the write it cut off).

const (
	crashURLEnv  = "RUNNEL_JETSTREAM_CRASH_URL"
	crashDirEnv  = "RUNNEL_JETSTREAM_CRASH_DIR"
	crashKillEnv = "RUNNEL_JETSTREAM_CRASH_KILL_AT" // messages the sink writes before the kill; 0: none
	crashKeys    = 16
	// crashAckWait is the consumer's AckWait: what the killed child had
	// delivered and not acknowledged comes again after it.
	crashAckWait = time.Second
)

// killSink writes through a Sink, and kills its own process once it has
// written killAt messages.
type killSink struct {
	*Sink
	src     *Source
	killAt  int64
	written atomic.Int64
}

func (k *killSink) Write(ctx context.Context, msgs []vertex.Message[[]byte]) ([]vertex.Result, error) {
	res, err := k.Sink.Write(ctx, msgs)
	if err == nil && res == nil && k.killAt > 0 {
		if n := k.written.Add(int64(len(msgs))); n >= k.killAt {
			crashtest.Printf("K %d %d %d", n, k.src.Redelivered(), k.Duplicates())
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	return res, err
}

// crashChild runs the pipeline until the end of "in" ("D") or its kill.
func crashChild() {
	killAt, _ := strconv.ParseInt(os.Getenv(crashKillEnv), 10, 64)
	nc, err := nats.Connect(os.Getenv(crashURLEnv), natstest.ConnectOptions()...)
	if err != nil {
		crashtest.Fail("connect: %v", err)
	}
	defer nc.Close()
	ks := &killSink{killAt: killAt}
	p, src, err := jsPipeline(nc, "crash", crashAckWait,
		func(s *Sink) vertex.Sink[[]byte] { ks.Sink = s; return ks },
		pipeline.WithStorage(pipeline.MMap(os.Getenv(crashDirEnv))))
	if err != nil {
		crashtest.Fail("build: %v", err)
	}
	ks.src = src
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.Run(ctx); err != nil {
		crashtest.Fail("run: %v", err)
	}
	crashtest.Printf("D 0 %d %d", src.Redelivered(), ks.Duplicates())
}

func TestCrashDeliversAtLeastOnce(t *testing.T) {
	const rounds, perRound = 3, 3000
	srv := natstest.Start(t)
	js := newJS(t, srv.Connect())
	createStream(t, js, "in")
	createStream(t, js, "out")
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 22))
	env := []string{crashURLEnv + "=" + srv.URL(), crashDirEnv + "=" + dir}
	total, kills := 0, 0
	var redelivered, suppressed int64
	for round := range rounds + 1 {
		last := round == rounds
		killAt := int64(0)
		if !last {
			publishIDs(t, js, "in", total, total+perRound, crashKeys)
			total += perRound
			// Within what the round is sure to write: its own ids.
			killAt = int64(perRound/20 + rng.IntN(perRound*3/4))
		}
		child := crashtest.Start(t, "jetstream-crash", append(env, crashKillEnv+"="+strconv.FormatInt(killAt, 10))...)
		if !child.Wait(2 * time.Minute) {
			t.Fatalf("round %d: the child did not end within 2 minutes; output %q", round, child.Lines())
		}
		recs := crashtest.Records(t, "round "+strconv.Itoa(round), child.Lines())
		// Two sink replicas may both pass the kill mark before the
		// signal lands: several kill lines, of which the last counts.
		for _, rec := range recs {
			if len(rec) != 4 || rec[0] != recs[0][0] || rec[0] == "D" && len(recs) > 1 {
				t.Fatalf("round %d: the child printed %q, want one end line or kill lines of 4 fields", round, child.Lines())
			}
		}
		if len(recs) == 0 {
			t.Fatalf("round %d: the child printed nothing", round)
		}
		recs = recs[len(recs)-1:]
		r, _ := strconv.ParseInt(recs[0][2], 10, 64)
		d, _ := strconv.ParseInt(recs[0][3], 10, 64)
		redelivered += r
		suppressed += d
		switch {
		case !last && recs[0][0] == "K":
			if ws := child.State().Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("round %d: the child ended with %v after its kill line", round, child.State())
			}
			kills++
			t.Logf("round %d: killed after writing %s messages (target %d); %d redelivered, %d duplicates dropped by the stream",
				round, recs[0][1], killAt, r, d)
		case last && recs[0][0] == "D":
			t.Logf("last round: %d redelivered, %d duplicates dropped by the stream", r, d)
		default:
			t.Fatalf("round %d: the child printed %q", round, child.Lines())
		}
	}
	out := readStream(t, js, "out")
	counts := countIDs(t, out, crashKeys)
	dups := 0
	for i := range total {
		n := counts["ID-"+strconv.Itoa(i)]
		if n == 0 {
			t.Fatalf("ID-%d never reached the output (of %d ids, %d messages)", i, total, len(out))
		}
		dups += n - 1
	}
	if len(counts) != total {
		t.Fatalf("%d distinct values in the output, want the %d ids", len(counts), total)
	}
	if len(out) != total+dups {
		t.Fatalf("%d messages for %d ids and %d duplicates", len(out), total, dups)
	}
	if int64(dups)+suppressed < int64(kills) {
		t.Fatalf("%d duplicates stored and %d dropped after %d kills: each kill repeats at least the write it cut off", dups, suppressed, kills)
	}
	t.Logf("%d ids through %d kills and a last run: %d messages stored, %d duplicates stored, %d dropped by the duplicate window, %d deliveries repeated by the server",
		total, kills, len(out), dups, suppressed, redelivered)
}
