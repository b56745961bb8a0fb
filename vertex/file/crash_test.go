package file_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/crashtest"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/vertex/file"
)

// The crash test of the file connectors: a child process runs file source
// -> map -> file sink on mmap storage and kills itself (SIGKILL) once its
// sink has acknowledged a share of the round's lines drawn at random; the
// parent adds a file of new lines before each round and starts the child
// again on the same directories. The child prints the ids of every batch
// the sink acknowledged (after the file sink's Write returned, which is
// when the pipeline acknowledges it); after each kill every one of them
// must be in the sink's files (a Write returns only once its lines are on
// the disk: a process kill can lose none of them). A last run ends by
// itself; then every id is in the final files at least once, no line is
// torn, no file is left open, and the duplicates (batches the sink wrote
// and the kill stopped before the pipeline committed them) are counted.

// The child's environment.
const (
	crashDirEnv = "RUNNEL_FILE_CRASH_DIR"
	crashAtEnv  = "RUNNEL_FILE_CRASH_AT" // acknowledged lines at which the child kills itself; none: run to the end
)

var children = map[string]func(){"file-crash": fileCrashChild}

// crashDirs are the input files', the sink's and the pipeline's directories.
func crashDirs(dir string) (in, out, data string) {
	return filepath.Join(dir, "in"), filepath.Join(dir, "out"), filepath.Join(dir, "data")
}

// reportingSink prints the ids of what the file sink acknowledged, and
// kills its process once it has acknowledged at lines.
type reportingSink struct {
	*file.Sink
	at   int
	mu   sync.Mutex
	done int
}

func (s *reportingSink) Write(ctx context.Context, msgs []vertex.Message[[]byte]) ([]vertex.Result, error) {
	res, err := s.Sink.Write(ctx, msgs)
	if err != nil || res != nil {
		return res, err
	}
	var b strings.Builder
	b.WriteString("A")
	for _, m := range msgs {
		b.WriteByte(' ')
		b.Write(bytes.TrimPrefix(m.Value, []byte("ID-")))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	crashtest.Printf("%s", b.String())
	if s.done += len(msgs); s.at > 0 && s.done >= s.at {
		crashtest.Printf("K %d", s.done)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	return nil, nil
}

func fileCrashChild() {
	in, out, data := crashDirs(os.Getenv(crashDirEnv))
	at, _ := strconv.Atoi(os.Getenv(crashAtEnv))
	p := pipeline.New("files", pipeline.WithStorage(pipeline.MMap(data)))
	lines := pipeline.Source(p, "lines", file.NewSource(filepath.Join(in, "*.log")), vertex.BatchSize(100))
	upper := pipeline.Map(p, "upper", lines, func(_ context.Context, v []byte) ([]byte, error) {
		return bytes.ToUpper(v), nil
	}, vertex.Replicas(2), vertex.BatchSize(50))
	sink := &reportingSink{Sink: file.NewSink(out, file.RotateLines(500)), at: at}
	pipeline.Sink(p, "out", upper, sink, vertex.BatchSize(50))
	if err := p.Run(context.Background()); err != nil {
		crashtest.Fail("run: %v", err)
	}
	crashtest.Printf("D")
}

func TestCrashFileToFile(t *testing.T) {
	rounds, perRound := 8, 4000
	if testing.Short() {
		rounds, perRound = 4, 2000
	}
	dir := t.TempDir()
	in, out, _ := crashDirs(dir)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	start := time.Now()
	total, acked := 0, 0
	for round := range rounds {
		writeIDs(t, filepath.Join(in, "round-"+strconv.Itoa(100+round)+".log"), total, total+perRound)
		total += perRound
		// What this round's new file holds was never acknowledged: the
		// sink acknowledges at least perRound lines before the run ends.
		at := perRound/20 + rng.IntN(perRound*9/10)
		child := crashtest.Start(t, "file-crash", crashDirEnv+"="+dir, crashAtEnv+"="+strconv.Itoa(at))
		if !child.Wait(2 * time.Minute) {
			t.Fatalf("round %d: the child did not kill itself within 2 minutes", round)
		}
		killed := false
		var ids []int
		for _, rec := range crashtest.Records(t, "round "+strconv.Itoa(round), child.Lines()) {
			switch rec[0] {
			case "K":
				killed = true
			case "A":
				for _, f := range rec[1:] {
					ids = append(ids, crashtest.Atoi(f))
				}
			}
		}
		ws, ok := child.State().Sys().(syscall.WaitStatus)
		if !killed || !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: the child was to kill itself after %d lines, it ended with %v", round, at, child.State())
		}
		// Every line the sink acknowledged is in its files, the one left
		// open included.
		counts, _, _ := countLines(t, out, "part-*")
		for _, id := range ids {
			if counts[id] == 0 {
				t.Fatalf("round %d: id %d was acknowledged by the sink and is in none of its files", round, id)
			}
		}
		acked += len(ids)
	}
	child := crashtest.Start(t, "file-crash", crashDirEnv+"="+dir)
	if !child.Wait(3 * time.Minute) {
		t.Fatal("the final run did not end")
	}
	if lines := child.Lines(); child.State().ExitCode() != 0 || len(lines) == 0 || lines[len(lines)-1] != "D" {
		t.Fatalf("final run: %v, last lines %q", child.State(), lines[max(0, len(lines)-3):])
	}
	counts, perFile := outputCounts(t, out)
	dups := 0
	for id := range total {
		switch c := counts[id]; {
		case c == 0:
			t.Fatalf("id %d never reached the sink's files", id)
		case c > 1:
			dups += c - 1
		}
	}
	if len(counts) != total {
		t.Fatalf("the sink's files hold %d ids, the input %d", len(counts), total)
	}
	if left, _ := filepath.Glob(filepath.Join(out, "*.open")); len(left) > 0 {
		t.Fatalf("files left open after the final run: %v", left)
	}
	t.Logf("%d rounds, each SIGKILLed mid-run, in %v: all %d ids delivered, %d duplicates (%.2f%%); %d acknowledged lines checked in the files after the kills; %d files",
		rounds, time.Since(start).Round(time.Millisecond), total, dups, 100*float64(dups)/float64(total), acked, len(perFile))
}
