package pipeline

import (
	"context"
	"errors"
	"flag"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/watermark"
)

// sharedTestStorage is storage shared by the "processes" of a test (one
// Pipeline each, in this process): a buffer per vertex on an
// isbtest.SharedStore, one watermark store, one run. It is not durable, so
// it needs no source state nor reduce log.
type sharedTestStorage struct {
	mu     sync.Mutex
	stores map[string]*isbtest.SharedStore[[]byte]
	wm     *watermark.MemStore
	ended  []string
	after  string // the Run.After JoinRun answers
}

func newSharedTestStorage() *sharedTestStorage {
	return &sharedTestStorage{stores: map[string]*isbtest.SharedStore[[]byte]{}, wm: watermark.NewMemStore()}
}

func (s *sharedTestStorage) String() string { return "shared-test" }
func (s *sharedTestStorage) Durable() bool  { return false }
func (s *sharedTestStorage) Shared() bool   { return true }

func (s *sharedTestStorage) OpenBuffer(spec BufferSpec) (isb.Backend[[]byte], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := spec.Pipeline + "/" + spec.Vertex
	if s.stores[key] == nil {
		s.stores[key] = isbtest.NewSharedStore[[]byte]()
	}
	return s.stores[key].Backend(), nil
}

func (s *sharedTestStorage) SourceState(string, string) (StateStore, error) { return nil, nil }
func (s *sharedTestStorage) ReduceLog(string, string) (string, error)       { return "", nil }
func (s *sharedTestStorage) Watermarks(string) (watermark.Store, error)     { return s.wm, nil }
func (s *sharedTestStorage) JoinRun(string) (Run, error) {
	return Run{ID: "run1", After: s.after}, nil
}

func (s *sharedTestStorage) EndRun(_, run, processor string, all []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = append(s.ended, run+":"+processor)
	return nil
}

// endedRuns returns the ends EndRun recorded ("run:processor"), read
// under the lock: a sink process may end its run while a test reads.
func (s *sharedTestStorage) endedRuns() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ended)
}

// chain is the pipeline every "process" of the subset tests builds: a
// slice source of n ints, a map with 2 replicas adding 1, a sink.
func chain(st Storage, n int, sink *collector[int], opts ...Option) *Pipeline {
	p := New("chain", append([]Option{WithStorage(st), DrainTimeout(time.Minute)}, opts...)...)
	src := Source(p, "src", vertex.FromSlice(ints(n)), vertex.BatchSize(50))
	plus := Map(p, "plus", src, func(_ context.Context, v int) (int, error) { return v + 1, nil },
		vertex.Replicas(2), vertex.Partitions(2))
	Sink(p, "sink", plus, sink)
	return p
}

// Three processes, each running part of one pipeline, meet in shared
// storage: the source's end of stream crosses to the map replicas in two
// other processes and on to the sink, every process ends by itself, and
// the sink got every value once; the sink's end is recorded for the run.
func TestSubsetsRunOnePipeline(t *testing.T) {
	const n = 2000
	st := newSharedTestStorage()
	sink := newCollector[int]()
	runs := [][]RunOption{
		{Replicas("plus", 1), Only("sink")},
		{Replicas("plus", 0)},
		{Only("src")},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for i, opts := range runs {
		p := chain(st, n, sink)
		wg.Go(func() { errs[i] = p.Run(ctx, opts...) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("process %d: Run: %v", i, err)
		}
	}
	got := sortedValues(sink)
	want := make([]int, n)
	for i := range want {
		want[i] = i + 1
	}
	if !slices.Equal(got, want) {
		t.Fatalf("sink got %d values (%v...), want 1..%d once each", len(got), got[:min(5, len(got))], n)
	}
	if ended := st.endedRuns(); !slices.Equal(ended, []string{"run1:sink/0"}) {
		t.Errorf("ended = %v, want [run1:sink/0]", ended)
	}
}

// A process whose join started a new run logs the run it came after, the
// reason a process restarted after its run ended waits for new upstream
// data; one that joined a run going on logs no such field.
func TestRunLogsTheRunANewRunCameAfter(t *testing.T) {
	for _, after := range []string{"run0", ""} {
		st := newSharedTestStorage()
		st.after = after
		core, logs := observer.New(zap.InfoLevel)
		p := chain(st, 10, newCollector[int](), WithLogger(zap.New(core)))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := p.Run(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		starting := logs.FilterMessage("pipeline starting").All()
		if len(starting) != 1 {
			t.Fatalf("%d \"pipeline starting\" lines, want 1", len(starting))
		}
		fields := starting[0].ContextMap()
		if fields["run"] != "run1" {
			t.Errorf("run = %v, want run1", fields["run"])
		}
		if got, ok := fields["after run"]; after != "" && got != after || after == "" && ok {
			t.Errorf("with Run.After %q: \"after run\" = %v (logged: %v)", after, got, ok)
		}
	}
}

// A process that stops (ctx cancelled) ends nothing downstream: the map
// replica stopped mid-run is started again in a new process, and the
// pipeline finishes with every value delivered at least once.
func TestSubsetStopsWithoutEnding(t *testing.T) {
	const n = 5000
	st := newSharedTestStorage()
	sink := newCollector[int]()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var errSink, errSrc error
	wg.Go(func() { errSink = chain(st, n, sink).Run(ctx, Only("sink"), Replicas("plus", 1)) })
	wg.Go(func() { errSrc = chain(st, n, sink).Run(ctx, Only("src")) })

	stopCtx, stop := context.WithCancel(ctx)
	first := make(chan error, 1)
	go func() { first <- chain(st, n, sink).Run(stopCtx, Replicas("plus", 0)) }()
	for len(sink.values()) < 100 && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	stop()
	if err := <-first; err != nil {
		t.Fatalf("stopped map process: Run = %v, want nil", err)
	}
	// Nothing ended: the sink's process is still running.
	if ended := st.endedRuns(); len(ended) != 0 {
		t.Fatalf("a stopped process ended the run: %v", ended)
	}
	if err := chain(st, n, sink).Run(ctx, Replicas("plus", 0)); err != nil {
		t.Fatalf("restarted map process: %v", err)
	}
	wg.Wait()
	if errSink != nil || errSrc != nil {
		t.Fatalf("sink process: %v; source process: %v", errSink, errSrc)
	}
	seen := map[int]int{}
	for _, v := range sink.values() {
		seen[v]++
	}
	for v := 1; v <= n; v++ {
		if seen[v] == 0 {
			t.Fatalf("value %d never reached the sink (%d distinct of %d)", v, len(seen), n)
		}
	}
	if len(seen) != n {
		t.Fatalf("sink saw %d distinct values, want %d", len(seen), n)
	}
}

// A replica that runs in one process is refused to a second one, with a
// *ReplicaError naming it, and the second process starts nothing.
func TestSubsetReplicaTaken(t *testing.T) {
	st := newSharedTestStorage()
	sink := newCollector[int]()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The first process runs the source and map replica 1; its source's
	// first read comes after every claim is made.
	gate := make(chan struct{})
	first := New("chain", WithStorage(st))
	Sink(first, "sink", Map(first, "plus", Source(first, "src", &blockingSource{gate: gate}, vertex.BatchSize(50)),
		func(_ context.Context, v int) (int, error) { return v, nil }, vertex.Replicas(2), vertex.Partitions(2)), sink)
	done := make(chan error, 1)
	go func() { done <- first.Run(ctx, Only("src"), Replicas("plus", 1)) }()
	select {
	case <-gate:
	case err := <-done:
		t.Fatalf("first process ended before its source read: %v", err)
	}
	for _, c := range []struct {
		opts    []RunOption
		vertex  string
		replica int
	}{
		{[]RunOption{Replicas("plus", 1)}, "plus", 1},
		{[]RunOption{Only("src")}, "src", 0},
		{[]RunOption{Replicas("plus", 0, 1)}, "plus", 1},
	} {
		err := chain(st, 10, sink).Run(ctx, c.opts...)
		var re *ReplicaError
		if !errors.As(err, &re) || !errors.Is(err, ErrReplicaTaken) || re.Vertex != c.vertex || re.Replica != c.replica {
			t.Fatalf("second Run of %s replica %d = %v, want a *ReplicaError naming them", c.vertex, c.replica, err)
		}
	}
	if n := len(sink.values()); n != 0 {
		t.Fatalf("the refused processes delivered %d values", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("first process: %v", err)
	}
	// Its claims are released: the replica runs in another process now.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if err := chain(st, 10, sink).Run(ctx2, Replicas("plus", 1)); err != nil {
		t.Fatalf("Run of plus replica 1 after the first process stopped: %v", err)
	}
}

// blockingSource is a source that closes gate on its first read and then
// reads nothing until its context ends.
type blockingSource struct {
	gate chan struct{}
	once sync.Once
}

func (s *blockingSource) Read(ctx context.Context, max int) ([]vertex.Message[int], error) {
	s.once.Do(func() { close(s.gate) })
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Millisecond):
	}
	return nil, nil
}

// Subsets are checked against the graph and the storage before anything
// runs.
func TestSubsetRefused(t *testing.T) {
	sink := newCollector[int]()
	for _, c := range []struct {
		name string
		st   Storage
		opts []RunOption
		want error
	}{
		{"unknown vertex", newSharedTestStorage(), []RunOption{Only("nope")}, ErrUnknownVertex},
		{"replica out of range", newSharedTestStorage(), []RunOption{Replicas("plus", 2)}, ErrInvalidOption},
		{"no replica", newSharedTestStorage(), []RunOption{Replicas("plus")}, ErrInvalidOption},
		{"memory", Memory(), []RunOption{Only("src")}, ErrStorage},
		{"mmap", MMap(t.TempDir()), []RunOption{Replicas("plus", 0)}, ErrStorage},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := chain(c.st, 10, sink).Run(context.Background(), c.opts...)
			if !errors.Is(err, c.want) {
				t.Fatalf("Run = %v, want %v", err, c.want)
			}
		})
	}
	// The whole pipeline named is no subset: memory runs it.
	err := chain(Memory(), 10, sink).Run(context.Background(), Only("src", "sink"), Replicas("plus", 1, 0))
	if err != nil {
		t.Fatalf("Run of every vertex on memory = %v", err)
	}
}

func TestVerticesFlag(t *testing.T) {
	for _, c := range []struct {
		spec string
		want map[string][]int
		bad  bool
	}{
		{"", nil, false},
		{"src", map[string][]int{"src": nil}, false},
		{"plus:0+1, sink", map[string][]int{"plus": {0, 1}, "sink": nil}, false},
		{"plus:1,plus:0", map[string][]int{"plus": {1, 0}}, false},
		{"plus:x", nil, true},
		{"plus:-1", nil, true},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		var v Vertices
		fs.Var(&v, "vertices", "")
		err := fs.Parse([]string{"-vertices=" + c.spec})
		if c.bad {
			if err == nil {
				t.Errorf("%q: parsed, want an error", c.spec)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", c.spec, err)
		}
		var s subset
		v.Option()(&s)
		if len(s.only) != len(c.want) {
			t.Fatalf("%q: %v, want %v", c.spec, s.only, c.want)
		}
		for k, reps := range c.want {
			got, ok := s.only[k]
			if !ok || !slices.Equal(got, reps) {
				t.Errorf("%q: %s = %v, want %v", c.spec, k, got, reps)
			}
		}
		if v.String() != c.spec {
			t.Errorf("String = %q, want %q", v.String(), c.spec)
		}
	}
}
