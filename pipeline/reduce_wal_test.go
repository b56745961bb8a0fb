package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/wal"
)

// The reduce runs of these tests: a generator of walN messages over walKeys
// keys, 100µs of event time apart (6 s in all), through a map that cancels
// the run once it has seen message stopAt, into a reduce on durable storage
// with Partitions(6) summing and counting each window and key.
const (
	walN       = 60_000
	walKeys    = 12
	walParts   = 6
	walSpacing = 100 * time.Microsecond
)

var walBase = time.Unix(1_800_000_000, 0)

// countSum counts and sums the values of a window.
func countSum() vertex.Aggregator[int64, [2]int64, [2]int64] {
	return vertex.Aggregator[int64, [2]int64, [2]int64]{
		Create: func() [2]int64 { return [2]int64{} },
		Add:    func(a [2]int64, m vertex.Message[int64]) [2]int64 { return [2]int64{a[0] + 1, a[1] + m.Value} },
		Merge:  func(a, b [2]int64) [2]int64 { return [2]int64{a[0] + b[0], a[1] + b[1]} },
		Result: func(a [2]int64) [2]int64 { return a },
	}
}

// walRun is one run of the reduce pipeline on dir.
type walRun struct {
	replicas int
	window   vertex.Windowing
	stopAt   int64 // cancel once the map has seen this message; -1: run to the end
	opts     []Option
}

// run runs it and adds its results, by "window start/key", to got; a
// result emitted twice (in this run or an earlier one) is an error.
func (c walRun) run(t *testing.T, dir string, got map[string][2]int64) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := New("rw", append([]Option{WithStorage(MMap(dir))}, c.opts...)...)
	gen := Source(p, "gen", vertex.Generator(func(i int64) int64 { return i }).WithCount(walN).WithKeys(walKeys).
		WithEventTime(func(i int64) time.Time { return walBase.Add(time.Duration(i) * walSpacing) }))
	var once sync.Once
	// A small buffer keeps the generator close to the map: it is still
	// generating when the map cancels.
	passed := Map(p, "pass", gen, func(_ context.Context, v int64) (int64, error) {
		if c.stopAt >= 0 && v >= c.stopAt {
			once.Do(cancel)
		}
		return v, nil
	}, vertex.BufferCapacity(2000))
	res, _ := Reduce(p, "sum", passed, c.window, countSum(), vertex.Replicas(c.replicas), vertex.Partitions(walParts))
	var mu sync.Mutex
	Sink(p, "out", res, vertex.Func(func(_ context.Context, ms []vertex.Message[vertex.Windowed[[2]int64]]) error {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range ms {
			k := fmt.Sprintf("%d/%s", m.Value.Window.Start.Sub(walBase).Milliseconds(), m.Value.Keys[0])
			if old, dup := got[k]; dup {
				t.Errorf("window %s emitted twice: %v, then %v", k, old, m.Value.Value)
			}
			got[k] = m.Value.Value
		}
		return nil
	}))
	return p.Run(ctx)
}

// oracle computes the results of fixed windows of length over the
// generator's input, independently of runnel.
func oracle(length time.Duration) map[string][2]int64 {
	want := map[string][2]int64{}
	for i := range int64(walN) {
		at := time.Duration(i) * walSpacing
		k := fmt.Sprintf("%d/k%d", at.Truncate(length).Milliseconds(), i%walKeys)
		r := want[k]
		want[k] = [2]int64{r[0] + 1, r[1] + i}
	}
	return want
}

// compareResults reports every window and key whose result differs.
func compareResults(t *testing.T, got, want map[string][2]int64) {
	t.Helper()
	missing, wrong := 0, 0
	for _, k := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[k]
		switch {
		case !ok:
			missing++
			t.Errorf("window %s: no result, want %v", k, want[k])
		case g != want[k]:
			wrong++
			t.Errorf("window %s: count and sum %v, want %v", k, g, want[k])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("window %s: result %v, not in the input", k, got[k])
		}
	}
	if missing+wrong > 0 {
		t.Fatalf("%d of %d results missing, %d wrong", missing, len(want), wrong)
	}
}

// TestReduceRescaleKeepsOpenWindows (issue 18, defect 2): a reduce on
// durable storage stopped with windows open and started again with other
// Replicas (the same Partitions(6)), 2 -> 3 -> 2 and 3 -> 2 -> 3, emits for
// every window and key exactly the count and sum of its input. Before the
// WAL was kept per partition each replica opened replica-{r}-of-{n}, so the
// windows open at a rescale were never emitted.
func TestReduceRescaleKeepsOpenWindows(t *testing.T) {
	for _, scale := range [][3]int{{2, 3, 2}, {3, 2, 3}} {
		t.Run(fmt.Sprintf("%d-%d-%d", scale[0], scale[1], scale[2]), func(t *testing.T) {
			dir := t.TempDir()
			got := map[string][2]int64{}
			w := vertex.Fixed(time.Second)
			for i, stop := range []int64{walN / 3, 2 * walN / 3, -1} {
				if err := (walRun{replicas: scale[i], window: w, stopAt: stop}).run(t, dir, got); err != nil {
					t.Fatalf("run %d with %d replicas: %v", i+1, scale[i], err)
				}
				t.Logf("after run %d (%d replicas): %d results", i+1, scale[i], len(got))
			}
			compareResults(t, got, oracle(time.Second))
		})
	}
}

// TestReduceWindowingChangeIsRefused (issue 18, defect 3): a restart with
// Fixed(10m) over a WAL holding open Fixed(24h) windows is a
// *WindowingError naming the log and both windowings (it used to emit the
// old 24h windows beside the new ones); closing the old windows out with
// EmitOpenWindowsOnStop lets the next run take the new windowing.
func TestReduceWindowingChangeIsRefused(t *testing.T) {
	dir := t.TempDir()
	got := map[string][2]int64{}
	day, tenMin := vertex.Fixed(24*time.Hour), vertex.Fixed(10*time.Minute)
	if err := (walRun{replicas: 2, window: day, stopAt: walN / 2}).run(t, dir, got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("the first run emitted %d day windows, want none (all open)", len(got))
	}
	err := (walRun{replicas: 2, window: tenMin, stopAt: -1}).run(t, dir, got)
	var we *WindowingError
	if !errors.As(err, &we) || !errors.Is(err, ErrWindowingChanged) || we.Stored != day || we.Asked != tenMin || we.Open == 0 ||
		filepath.Dir(we.Dir) != filepath.Join(dir, "rw.wal", "sum") {
		t.Fatalf("restart with another windowing: %v (results %d), want a *WindowingError stored %v asked %v", err, len(got), day, tenMin)
	}
	t.Log(err)
	if len(got) != 0 {
		t.Fatalf("the refused run emitted %d results", len(got))
	}
	// Close the day windows out: cancelled with EmitOpenWindowsOnStop, the
	// old windowing emits what it holds.
	if err := (walRun{replicas: 2, window: day, stopAt: 0, opts: []Option{EmitOpenWindowsOnStop()}}).run(t, dir, got); err != nil {
		t.Fatal(err)
	}
	closed := 0
	for k, r := range got {
		closed += int(r[0])
		delete(got, k)
	}
	if closed < walN/2 {
		t.Fatalf("closing out emitted %d messages in day windows, want at least the %d of the first run", closed, walN/2)
	}
	// Now the ten-minute windowing runs to the end: its windows hold what
	// the closed-out day windows did not.
	if err := (walRun{replicas: 2, window: tenMin, stopAt: -1}).run(t, dir, got); err != nil {
		t.Fatalf("after closing out: %v", err)
	}
	n := 0
	for _, r := range got {
		n += int(r[0])
	}
	if n+closed != walN {
		t.Fatalf("the day windows held %d messages, the ten-minute ones %d: want %d in all", closed, n, walN)
	}
}

// TestReduceMissingWALIsRefused (issue 18, defect 9): deleting the live
// generation of a partition's log, or the vertex's whole WAL directory,
// while windows are open is refused at the next start (it used to start
// empty: the windows' messages, acknowledged, were lost with no error).
func TestReduceMissingWALIsRefused(t *testing.T) {
	tests := []struct {
		name   string
		remove func(t *testing.T, walDir string)
		want   error
	}{
		{"live generation deleted", func(t *testing.T, walDir string) {
			gens, _ := filepath.Glob(filepath.Join(walDir, "partition-*", "gen-*"))
			if len(gens) == 0 {
				t.Fatal("no generation to delete")
			}
			for _, g := range gens {
				os.RemoveAll(g)
			}
		}, wal.ErrCorrupt},
		{"WAL directory deleted", func(t *testing.T, walDir string) {
			if err := os.RemoveAll(walDir); err != nil {
				t.Fatal(err)
			}
		}, ErrReduceLogMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			got := map[string][2]int64{}
			w := vertex.Fixed(24 * time.Hour)
			if err := (walRun{replicas: 2, window: w, stopAt: walN / 2}).run(t, dir, got); err != nil {
				t.Fatal(err)
			}
			vdir := filepath.Join(dir, "rw.wal", "sum")
			tt.remove(t, vdir)
			before := listTree(t, vdir)
			for range 2 { // a refusal changes nothing: refused again
				err := (walRun{replicas: 2, window: w, stopAt: -1}).run(t, dir, got)
				if !errors.Is(err, tt.want) {
					t.Fatalf("restart without the WAL: %v (results: %v), want %v", err, got, tt.want)
				}
				t.Log(err)
				if after := listTree(t, vdir); !slices.Equal(after, before) {
					t.Fatalf("a refused run changed the WAL directory: %v -> %v", before, after)
				}
			}
			if len(got) != 0 {
				t.Fatalf("refused runs emitted %d results", len(got))
			}
		})
	}
}

// TestReduceReplicaLogsCarriedOver: logs of the layout before per-partition
// logs (replica-{r}-of-{n}, one per replica, with the replica's session
// ids, which may collide between replicas) are carried over to partition
// logs at the first start, their open windows emitted whole in the end.
func TestReduceReplicaLogsCarriedOver(t *testing.T) {
	dir := t.TempDir()
	got := map[string][2]int64{}
	w := vertex.Fixed(time.Second)
	if err := (walRun{replicas: 2, window: w, stopAt: walN / 2}).run(t, dir, got); err != nil {
		t.Fatal(err)
	}
	// Rebuild the old layout from the partition logs: replica r of 2
	// read partitions 3r..3r+2.
	vdir := filepath.Join(dir, "rw.wal", "sum")
	for r := range 2 {
		var entries []wal.Entry
		offsets := map[int32]int64{}
		var wm time.Time
		for part := 3 * r; part < 3*r+3; part++ {
			l, err := wal.Open(filepath.Join(vdir, fmt.Sprintf("partition-%d", part)))
			if err != nil {
				t.Fatal(err)
			}
			rec := l.Recovered()
			maps.Copy(offsets, rec.LastOffsets)
			if rec.Watermark.After(wm) {
				wm = rec.Watermark
			}
			for e, err := range l.Replay() {
				if err != nil {
					t.Fatal(err)
				}
				e.Keys, e.Value, e.Windows = slices.Clone(e.Keys), slices.Clone(e.Value), slices.Clone(e.Windows)
				entries = append(entries, e)
			}
			l.Close()
		}
		l, err := wal.Open(filepath.Join(vdir, fmt.Sprintf("replica-%d-of-2", r)), wal.Seed(offsets, wm))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Append(context.Background(), entries...); err != nil {
			t.Fatal(err)
		}
		l.Close()
		os.Remove(filepath.Join(vdir, fmt.Sprintf("replica-%d-of-2", r), "META")) // the old layout had none
	}
	for part := range walParts {
		os.RemoveAll(filepath.Join(vdir, fmt.Sprintf("partition-%d", part)))
	}
	// A migration a crash interrupted is started over.
	os.MkdirAll(filepath.Join(vdir, walMigrating, "partition-0"), 0o755)
	if err := (walRun{replicas: 3, window: w, stopAt: -1}).run(t, dir, got); err != nil {
		t.Fatal(err)
	}
	compareResults(t, got, oracle(time.Second))
	des, _ := os.ReadDir(vdir)
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	if want := []string{"partition-0", "partition-1", "partition-2", "partition-3", "partition-4", "partition-5"}; !slices.Equal(names, want) {
		t.Fatalf("after the migration the WAL directory holds %v, want %v", names, want)
	}
}

// TestReduceWALLayoutRefusals: a partition log the vertex has no partition
// for, and logs of both layouts side by side, are refused naming the
// directory.
func TestReduceWALLayoutRefusals(t *testing.T) {
	dir := t.TempDir()
	got := map[string][2]int64{}
	w := vertex.Fixed(time.Second)
	if err := (walRun{replicas: 2, window: w, stopAt: walN / 2}).run(t, dir, got); err != nil {
		t.Fatal(err)
	}
	vdir := filepath.Join(dir, "rw.wal", "sum")
	stray := filepath.Join(vdir, "partition-6")
	if err := os.Rename(filepath.Join(vdir, "partition-5"), stray); err != nil {
		t.Fatal(err)
	}
	err := (walRun{replicas: 2, window: w, stopAt: -1}).run(t, dir, got)
	var le *ReduceLogError
	if !errors.As(err, &le) || !errors.Is(err, ErrReduceLogLayout) || le.Dir != stray {
		t.Fatalf("a log of partition 6 of 6: %v, want a *ReduceLogError naming %s", err, stray)
	}
	if err := os.Rename(stray, filepath.Join(vdir, "partition-5")); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(vdir, "replica-0-of-2")
	if err := os.MkdirAll(old, 0o755); err != nil {
		t.Fatal(err)
	}
	err = (walRun{replicas: 2, window: w, stopAt: -1}).run(t, dir, got)
	if !errors.As(err, &le) || !errors.Is(err, ErrReduceLogLayout) || le.Dir != vdir {
		t.Fatalf("both layouts: %v, want a *ReduceLogError naming %s", err, vdir)
	}
	os.Remove(old)
	if err := (walRun{replicas: 2, window: w, stopAt: -1}).run(t, dir, got); err != nil {
		t.Fatal(err)
	}
	compareResults(t, got, oracle(time.Second))
}

// listTree lists the paths under dir (none when it does not exist).
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
		if err == nil && path != dir {
			paths = append(paths, path)
		}
		return nil
	})
	return paths
}

// A reduce on durable storage runs one shard (its WAL needs each
// partition's entries in offset order): a Concurrency above 1 is refused
// before anything starts, naming the vertex and the option; not given, it
// is 1.
func TestReduceConcurrencyOnDurableStorage(t *testing.T) {
	build := func(opts ...vertex.Option) *Pipeline {
		p := New("rc", WithStorage(MMap(t.TempDir())))
		s := Source(p, "src", vertex.FromSlice([]int{1, 2, 3}))
		res, _ := Reduce(p, "windowed", s, vertex.Fixed(time.Second), vertex.Counting[int](), opts...)
		Sink(p, "out", res, vertex.Blackhole[vertex.Windowed[int64]]())
		return p
	}
	err := build(vertex.Concurrency(2)).Run(context.Background())
	var ve *VertexError
	var oe *vertex.OptionError
	if !errors.Is(err, ErrInvalidOption) || !errors.As(err, &ve) || ve.Vertex != "windowed" || !errors.As(err, &oe) || oe.Option != "Concurrency" {
		t.Fatalf("Run with Concurrency(2): %v, want a *VertexError naming %q around an *OptionError for Concurrency", err, "windowed")
	}
	for _, opts := range [][]vertex.Option{nil, {vertex.Concurrency(1)}} {
		p := build(opts...)
		if err := p.Run(context.Background()); err != nil {
			t.Fatalf("Run with %d options: %v", len(opts), err)
		}
	}
}
