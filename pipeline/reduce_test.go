package pipeline

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/vertex"
)

func TestReduceValidationNamesTheVertex(t *testing.T) {
	tests := []struct {
		name   string
		window vertex.Windowing
		option string
	}{
		{"zero length", vertex.Fixed(0), "Window.Length"},
		{"negative length", vertex.Sliding(-time.Second, time.Second), "Window.Length"},
		{"slide above length", vertex.Sliding(time.Second, 2*time.Second), "Window.Slide"},
		{"negative lateness", vertex.Fixed(time.Second).WithAllowedLateness(-time.Millisecond), "Window.AllowedLateness"},
		{"zero gap", vertex.Session(0), "Window.Gap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New("v")
			s := Source(p, "src", vertex.FromSlice([]int{1}))
			res, _ := Reduce(p, "windowed", s, tt.window, vertex.Counting[int]())
			Sink(p, "out", res, vertex.Blackhole[vertex.Windowed[int64]]())
			err := p.Run(context.Background())
			var ve *VertexError
			var oe *vertex.OptionError
			if !errors.As(err, &ve) || ve.Vertex != "windowed" || !errors.As(err, &oe) || oe.Option != tt.option {
				t.Fatalf("Run: %v, want a *VertexError naming %q around an *OptionError for %s", err, "windowed", tt.option)
			}
			if !strings.Contains(err.Error(), `"windowed"`) || !strings.Contains(err.Error(), tt.option) {
				t.Fatalf("message %q does not name the vertex and the option", err)
			}
		})
	}
	others := []struct {
		name  string
		build func(p *Pipeline, s Stream[int])
		want  error
	}{
		{"session aggregator without merge", func(p *Pipeline, s Stream[int]) {
			agg := vertex.Counting[int]()
			agg.Merge = nil
			res, _ := Reduce(p, "windowed", s, vertex.Session(time.Second), agg)
			Sink(p, "out", res, vertex.Blackhole[vertex.Windowed[int64]]())
		}, ErrInvalidOption},
		{"nil streaming reducer", func(p *Pipeline, s Stream[int]) {
			res, _ := ReduceStream[int, int](p, "windowed", s, vertex.Fixed(time.Second), nil)
			Sink(p, "out", res, vertex.Blackhole[vertex.Windowed[int]]())
		}, ErrNilFunc},
		{"late stream alone", func(p *Pipeline, s Stream[int]) {
			_, late := Reduce(p, "windowed", s, vertex.Fixed(time.Second), vertex.Counting[int]())
			Sink(p, "out", late, vertex.Blackhole[int]())
		}, ErrNoOutput},
	}
	for _, tt := range others {
		t.Run(tt.name, func(t *testing.T) {
			p := New("v")
			tt.build(p, Source(p, "src", vertex.FromSlice([]int{1})))
			err := p.Run(context.Background())
			var ve *VertexError
			if !errors.Is(err, tt.want) || !errors.As(err, &ve) || ve.Vertex != "windowed" {
				t.Fatalf("Run: %v, want %v naming %q", err, tt.want, "windowed")
			}
		})
	}
}

// A reduce vertex runs on durable storage, with its WAL under the data
// directory (one per partition), and its results equal those on memory
// storage: every window closed by the end of stream, each once.
func TestReduceOnDurableStorage(t *testing.T) {
	run := func(st Storage) map[string]int64 {
		got, err := windowCounts(t, st)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return got
	}
	dir := t.TempDir()
	durable, memory := run(MMap(dir)), run(Memory())
	if len(memory) != 5*3 || !maps.Equal(durable, memory) {
		t.Fatalf("durable results %v, memory %v (want 15 windows and keys, equal)", durable, memory)
	}
	for part := range 2 {
		if _, err := os.Stat(filepath.Join(dir, "v.wal", "windowed", fmt.Sprintf("partition-%d", part), "META")); err != nil {
			t.Errorf("WAL of partition %d: %v", part, err)
		}
	}
}

// Edges into a reduce vertex route by keys: with one partition per
// replica, every message of a key reaches the same replica (so a window's
// key has exactly one result, complete), and the messages without keys
// all reach one replica (one global result per window).
func TestReduceRoutesByKey(t *testing.T) {
	const n, keys = 3000, 37 // 37 is prime to 5: every key gets messages
	var msgs []vertex.Message[int]
	for i := range n {
		m := vertex.Message[int]{ID: "m" + itoa(i), EventTime: time.Unix(100, 0), Value: i}
		if i%5 != 0 { // every fifth message has no keys
			m.Keys = []string{"k" + itoa(i%keys)}
		}
		msgs = append(msgs, m)
	}
	var mu sync.Mutex
	seenAt := map[string]map[int]int{} // key -> replica -> messages
	count := func(ctx context.Context, _ vertex.Window, keys []string, ms iter.Seq[vertex.Message[int]], emit func(int) error) error {
		r, _ := vertex.ReplicaFrom(ctx)
		k := strings.Join(keys, ",")
		c := 0
		for range ms {
			c++
		}
		mu.Lock()
		if seenAt[k] == nil {
			seenAt[k] = map[int]int{}
		}
		seenAt[k][r.Index] += c
		mu.Unlock()
		return emit(c)
	}
	p := New("routes")
	s := Source(p, "src", vertex.FromMessages(msgs), vertex.Replicas(1))
	spread := Map(p, "spread", s, ident, vertex.Replicas(3)) // several writers into the reduce
	res, _ := ReduceStream(p, "count", spread, vertex.Fixed(time.Hour), count, vertex.Replicas(4), vertex.Partitions(4))
	out := newCollector[vertex.Windowed[int]]()
	Sink(p, "out", res, out)
	runWithin(t, p, 30*time.Second)
	got := map[string]int{}
	for _, v := range out.values() {
		k := strings.Join(v.Keys, ",")
		if _, dup := got[k]; dup {
			t.Errorf("key %q has two results in one window", k)
		}
		got[k] = v.Value
	}
	if len(got) != keys+1 {
		t.Errorf("%d results, want %d (one per key and one for the messages without keys)", len(got), keys+1)
	}
	if got[""] != n/5 {
		t.Errorf("the messages without keys: one result of %d, want %d", got[""], n/5)
	}
	for i := range keys {
		k := "k" + itoa(i)
		want := 0
		for j := range n {
			if j%5 != 0 && j%keys == i {
				want++
			}
		}
		if got[k] != want {
			t.Errorf("key %s: %d, want %d", k, got[k], want)
		}
	}
	replicas := map[int]bool{}
	for k, at := range seenAt {
		if len(at) != 1 {
			t.Errorf("key %q reached replicas %v, want one", k, at)
		}
		for r := range at {
			replicas[r] = true
		}
	}
	if len(replicas) < 2 {
		t.Errorf("all keys reached replicas %v: routing does not spread keys", replicas)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// The typed builder turns a stream of the wrong type into a compile
// error: testdata/typecheck/ok builds, testdata/typecheck/bad (a stream of
// strings into an aggregator of ints) does not, for that reason.
func TestReduceTypeMismatchIsACompileError(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	build := func(dir string) (string, error) {
		out, err := exec.Command("go", "build", "-o", t.TempDir()+"/bin", "./testdata/typecheck/"+dir).CombinedOutput()
		return string(out), err
	}
	if out, err := build("ok"); err != nil {
		t.Fatalf("the well-typed program does not build: %v\n%s", err, out)
	}
	out, err := build("bad")
	if err == nil {
		t.Fatal("a stream of strings into an aggregator of ints builds")
	}
	if !strings.Contains(out, "main.go:15") || !strings.Contains(out, "vertex.Aggregator[int, int64, int64]") {
		t.Fatalf("the build failed, but not on the mismatch:\n%s", out)
	}
}
