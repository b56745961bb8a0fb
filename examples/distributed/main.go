// Command distributed runs one pipeline over several OS processes that
// meet in NATS JetStream (pipeline/jsstorage):
//
//	src (generator) ──> assign (KeyBy, 2 replicas) ──> count (1 s windows) ──> out (sink: DIR/counts.txt)
//	                                                         └─ late ──> late (sink: DIR/late.txt)
//
// Every process builds the same graph and runs the part its -vertices flag
// names (pipeline.Vertices). The roles:
//
//	-vertices=src             the source: events numbered 0 to -events-1
//	-vertices=assign:0        replica 0 of the KeyBy (assign:1: replica 1)
//	-vertices=count,out,late  the reduce and its two sinks, on one machine:
//	                          the reduce keeps its WAL under -data, the sinks write beside it
//
// With -nats=URL a process runs its role against that server: the
// production shape, one process per role on as many machines as you like.
// Without -nats it starts an embedded NATS server with JetStream, runs the
// four roles as child processes of its own executable, waits for them and
// prints the count of every window and key, then how each process ended.
// So `go run ./examples/distributed` needs nothing installed.
//
// Event i has event time start + i*10ms and key keys[i%7%4] (the first
// three keys twice as often as the last), so a 1 s window holds 100 events.
// SIGINT or SIGTERM stops a process's own vertices without ending the
// others': they wait for it to be started again, and it resumes.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/runnel-dev/runnel/isb/jetstream"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/pipeline/jsstorage"
	"github.com/runnel-dev/runnel/vertex"
)

// roles are the processes the embedded mode starts.
var roles = []string{"src", "assign:0", "assign:1", "count,out,late"}

var (
	start = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) // event time of event 0
	keys  = []string{"eu", "us", "asia", "africa"}
)

const (
	window = time.Second
	// claimTTL is how long the claim of a killed process's replica
	// outlives it: a process started again for the replica sooner is
	// refused with pipeline.ErrReplicaTaken. A process that stops on a
	// signal gives its claims back at once.
	claimTTL = 5 * time.Second
	// exitTaken is a role's exit code when its replica is claimed by
	// another process (or by a killed one whose claim has not expired).
	exitTaken = 3
)

func keyOf(i int64) string { return keys[i%7%4] }

// config is the command line.
type config struct {
	nats     string
	vertices pipeline.Vertices
	data     string
	events   int64
	rate     float64
}

func main() {
	var c config
	flag.StringVar(&c.nats, "nats", "", "NATS server URL; without it, start an embedded server and every role as a child process")
	flag.Var(&c.vertices, "vertices", `the role this process runs: "src", "assign:0", "assign:1" or "count,out,late" (empty: the whole pipeline)`)
	flag.StringVar(&c.data, "data", filepath.Join(os.TempDir(), "runnel-distributed"), "directory of the reduce's WAL and the sinks' files (with -nats; the embedded mode uses a temporary one)")
	flag.Int64Var(&c.events, "events", 1000, "events the source generates")
	flag.Float64Var(&c.rate, "rate", 0, "events per second (0: as fast as the pipeline takes them)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if c.nats == "" {
		if c.vertices.String() != "" {
			fmt.Fprintln(os.Stderr, "-vertices needs -nats: without it the command runs every role itself")
			os.Exit(2)
		}
		if err := embedded(ctx, c, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(runRole(ctx, c))
}

// build is the graph every process builds, whatever it runs of it.
func build(st pipeline.Storage, c config) *pipeline.Pipeline {
	p := pipeline.New("distributed", pipeline.WithStorage(st))
	gen := vertex.Generator(func(i int64) int64 { return i }).WithCount(c.events).
		WithEventTime(func(i int64) time.Time { return start.Add(time.Duration(i) * 10 * time.Millisecond) })
	if c.rate > 0 {
		gen = gen.WithRate(c.rate)
	}
	events := pipeline.Source(p, "src", gen)
	keyed := pipeline.KeyBy(p, "assign", events, func(i int64) []string { return []string{keyOf(i)} },
		vertex.Replicas(2), vertex.Partitions(2))
	counts, late := pipeline.Reduce(p, "count", keyed, vertex.Fixed(window), vertex.Counting[int64]())
	pipeline.Sink(p, "out", counts, &fileSink[vertex.Windowed[int64]]{path: filepath.Join(c.data, "counts.txt"),
		line: func(w vertex.Windowed[int64]) string {
			return fmt.Sprintf("%s %s %d", w.Window.Start.Format(time.RFC3339Nano), w.Keys[0], w.Value)
		}})
	pipeline.Sink(p, "late", late, &fileSink[int64]{path: filepath.Join(c.data, "late.txt"),
		line: func(i int64) string { return strconv.FormatInt(i, 10) }})
	return p
}

// runRole runs the part of the pipeline c.vertices names against c.nats
// and returns the process's exit code. Its last line (on stdout when it
// exits 0, else on stderr) says how it ended.
func runRole(ctx context.Context, c config) int {
	role := c.vertices.String()
	if role == "" {
		role = "the whole pipeline"
	}
	if err := os.MkdirAll(c.data, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
		return 1
	}
	nc, err := nats.Connect(c.nats, nats.MaxReconnects(-1), nats.Name("runnel-distributed "+role))
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: connect to %s: %v\n", role, c.nats, err)
		return 1
	}
	defer nc.Close()
	st, err := jsstorage.New(nc, jsstorage.ReduceLogDir(c.data), jsstorage.BufferOptions(jetstream.ClaimTTL(claimTTL)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
		return 1
	}
	err = build(st, c).Run(ctx, c.vertices.Option())
	var taken *pipeline.ReplicaError
	switch {
	case errors.As(err, &taken):
		fmt.Fprintf(os.Stderr, "%s: refused: %s replica %d runs in another process (a killed one's claim expires after %v)\n",
			role, taken.Vertex, taken.Replica, claimTTL)
		return exitTaken
	case err != nil:
		fmt.Fprintf(os.Stderr, "%s: failed: %v\n", role, err)
		return 1
	case ctx.Err() != nil:
		fmt.Printf("%s: stopped by a signal, the pipeline not ended: start it again to resume\n", role)
	default:
		fmt.Printf("%s: ended: its part of the pipeline ran to the end\n", role)
	}
	return 0
}

// fileSink appends a line per message to path, opened at the first write
// (so that only the process that runs the sink creates it), and syncs it
// before it acknowledges the messages.
type fileSink[T any] struct {
	path string
	line func(T) string

	mu sync.Mutex // the sink's workers write concurrently
	f  *os.File
}

func (s *fileSink[T]) Write(_ context.Context, msgs []vertex.Message[T]) ([]vertex.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		f, err := os.OpenFile(s.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		s.f = f
	}
	var b []byte
	for _, m := range msgs {
		b = append(append(b, s.line(m.Value)...), '\n')
	}
	if _, err := s.f.Write(b); err != nil {
		return nil, err
	}
	return nil, s.f.Sync()
}

// embedded starts a NATS server in this process and every role as a child
// process against it, waits for them and prints the results to out.
func embedded(ctx context.Context, c config, out io.Writer) error {
	dir, err := os.MkdirTemp("", "runnel-distributed-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true,
		StoreDir: filepath.Join(dir, "nats"), NoLog: true, NoSigs: true,
	})
	if err != nil {
		return fmt.Errorf("embedded NATS server: %w", err)
	}
	srv.Start()
	defer srv.WaitForShutdown()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(30 * time.Second) {
		return errors.New("the embedded NATS server did not become ready in 30s")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	c.data = filepath.Join(dir, "data")
	if err := os.Mkdir(c.data, 0o755); err != nil {
		return err
	}

	// A failed process would leave the others waiting for it: the first
	// one that fails stops the rest (SIGTERM, as ctx does on a signal).
	interrupted := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	procs := make([]*child, len(roles))
	var wg sync.WaitGroup
	for i, role := range roles {
		p, err := startChild(ctx, exe, role, c, srv.ClientURL())
		if err != nil {
			cancel()
			wg.Wait()
			return err
		}
		procs[i] = p
		wg.Go(func() {
			if !p.wait() {
				cancel()
			}
		})
	}
	wg.Wait()

	if err := report(out, c); err != nil {
		return err
	}
	fmt.Fprintln(out)
	failed := 0
	for _, p := range procs {
		fmt.Fprintf(out, "process %-16s pid %-7d %s: %s\n", p.role, p.pid, p.state, p.last())
		if !p.ok {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d processes failed", failed, len(procs))
	}
	if interrupted.Err() != nil {
		fmt.Fprintln(out, "stopped by a signal before the end; the embedded server's data is removed with it")
	}
	return nil
}

// child is one role's process.
type child struct {
	role  string
	pid   int
	cmd   *exec.Cmd
	out   strings.Builder // its stdout and stderr
	ok    bool            // it exited 0
	state string
}

func startChild(ctx context.Context, exe, role string, c config, url string) (*child, error) {
	p := &child{role: role}
	p.cmd = exec.CommandContext(ctx, exe, "-nats="+url, "-vertices="+role, "-data="+c.data,
		"-events="+strconv.FormatInt(c.events, 10), "-rate="+strconv.FormatFloat(c.rate, 'f', -1, 64))
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	p.cmd.Cancel = func() error { // stop gracefully; Kill where there is no SIGTERM (Windows)
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			return p.cmd.Process.Kill()
		}
		return nil
	}
	p.cmd.WaitDelay = time.Minute
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", role, err)
	}
	p.pid = p.cmd.Process.Pid
	return p, nil
}

// wait waits for the process and reports whether it exited 0 (Wait's
// error is ctx's also then, when ctx stopped it).
func (p *child) wait() bool {
	t0 := time.Now()
	err := p.cmd.Wait()
	p.ok = p.cmd.ProcessState != nil && p.cmd.ProcessState.Success()
	p.state = fmt.Sprintf("%v after %v", p.cmd.ProcessState, time.Since(t0).Round(10*time.Millisecond))
	if p.cmd.ProcessState == nil {
		p.state = err.Error()
	}
	return p.ok
}

// last is the last line the process wrote (how it ended), without its
// role.
func (p *child) last() string {
	lines := strings.Split(strings.TrimSpace(p.out.String()), "\n")
	return strings.TrimPrefix(lines[len(lines)-1], p.role+": ")
}

// report prints the sink's counts, one line per window with its keys in
// order, and the number of late events. The sink delivers at least once:
// a result written twice (after a crash) has the same count.
func report(out io.Writer, c config) error {
	counts := map[time.Time]map[string]int64{}
	lines, err := readLines(filepath.Join(c.data, "counts.txt"))
	if err != nil {
		return err
	}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 {
			return fmt.Errorf("counts.txt: line %q is not \"window key count\"", l)
		}
		w, err1 := time.Parse(time.RFC3339Nano, f[0])
		n, err2 := strconv.ParseInt(f[2], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("counts.txt: line %q: %w", l, err)
		}
		if counts[w] == nil {
			counts[w] = map[string]int64{}
		}
		if had, ok := counts[w][f[1]]; ok && had != n {
			return fmt.Errorf("counts.txt: window %s key %s written twice, counts %d and %d", f[0], f[1], had, n)
		}
		counts[w][f[1]] = n
	}
	var total int64
	for _, w := range slices.SortedFunc(maps.Keys(counts), time.Time.Compare) {
		fmt.Fprintf(out, "%s-%s", w.Format("15:04:05"), w.Add(window).Format("15:04:05"))
		for _, k := range slices.Sorted(maps.Keys(counts[w])) {
			fmt.Fprintf(out, "  %s %d", k, counts[w][k])
			total += counts[w][k]
		}
		fmt.Fprintln(out)
	}
	late, err := readLines(filepath.Join(c.data, "late.txt"))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "events counted: %d of %d, late: %d\n", total, c.events, len(late))
	return nil
}

// readLines reads a sink's file; a file never written has no lines.
func readLines(name string) ([]string, error) {
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}
