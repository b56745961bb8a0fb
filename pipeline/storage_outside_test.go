package pipeline

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// outside is MMap seen through the Storage interface alone, as a storage
// of another package is: embedding the interface hides mmapStorage's type,
// so Run opens the buffers through OpenBuffer (bytes, encoded by the
// pipeline) instead of its typed path.
type outside struct{ Storage }

// noReduceLog is a durable storage that keeps no reduce log.
type noReduceLog struct{ Storage }

func (noReduceLog) ReduceLog(string, string) (string, error) { return "", nil }

// noState is a durable storage that keeps no source state.
type noState struct{ Storage }

func (noState) SourceState(string, string) (StateStore, error) { return nil, nil }

// windowCounts runs source -> reduce (2 s fixed windows, counts per key)
// -> sink on st and returns the results by window and key.
func windowCounts(t *testing.T, st Storage) (map[string]int64, error) {
	p := New("v", WithStorage(st))
	items := make([]vertex.Message[int], 100)
	for i := range items {
		items[i] = vertex.Message[int]{Keys: []string{strconv.Itoa(i % 3)}, EventTime: time.Unix(int64(i/10), 0), Value: i}
	}
	s := Source(p, "src", vertex.FromMessages(items))
	res, _ := Reduce(p, "windowed", s, vertex.Fixed(2*time.Second), vertex.Counting[int](), vertex.Replicas(2))
	var mu sync.Mutex
	got := map[string]int64{}
	Sink(p, "out", res, vertex.Func(func(_ context.Context, msgs []vertex.Message[vertex.Windowed[int64]]) error {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			k := m.Value.Window.Start.Format(time.TimeOnly) + "/" + strings.Join(m.Value.Keys, ",")
			if _, dup := got[k]; dup {
				t.Errorf("window %s emitted twice", k)
			}
			got[k] = m.Value.Value
		}
		return nil
	}))
	return got, p.Run(context.Background())
}

// A storage outside the package runs the same pipeline to the same
// results, its reduce keeps its WAL where ReduceLog says, and its buffers
// hold envelopes the pipeline encoded.
func TestStorageThroughTheInterface(t *testing.T) {
	dir := t.TempDir()
	got, err := windowCounts(t, outside{MMap(dir)})
	if err != nil {
		t.Fatalf("Run on outside storage: %v", err)
	}
	want, err := windowCounts(t, Memory())
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 15 || !maps.Equal(got, want) {
		t.Fatalf("outside storage: %v; memory: %v (want 15 equal results)", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "v.wal", "windowed", "partition-1", "META")); err != nil {
		t.Errorf("reduce WAL: %v", err)
	}
}

// A durable storage that keeps no reduce log, or no state for a resumable
// source, is refused before anything runs.
func TestDurableStorageWithoutLogsRefused(t *testing.T) {
	_, err := windowCounts(t, noReduceLog{outside{MMap(t.TempDir())}})
	if !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "reduce log") {
		t.Fatalf("Run without a reduce log = %v, want ErrStorage naming the reduce log", err)
	}
	p := New("gen", WithStorage(noState{outside{MMap(t.TempDir())}}))
	Sink(p, "out", Source(p, "src", vertex.Generator(func(i int64) int64 { return i }).WithCount(10)), vertex.Blackhole[int64]())
	err = p.Run(context.Background())
	if !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "source state") {
		t.Fatalf("Run of a resumable source without state = %v, want ErrStorage naming the source state", err)
	}
}

// A record of a bytes buffer that does not decode is a damaged record at
// its offset (isb.ErrCorrupt): what decoded before it is delivered, and
// the consumer steps over it.
func TestEncodedBufferDamagedRecord(t *testing.T) {
	c, err := newConfig([]Option{WithStorage(outside{MMap(t.TempDir())})})
	if err != nil {
		t.Fatal(err)
	}
	spec := BufferSpec{Pipeline: "p", Vertex: "v", Partitions: 1}
	raw, err := c.storage.OpenBuffer(spec)
	if err != nil {
		t.Fatal(err)
	}
	enc := newEncodedBackend(raw, envelopeOf[string](&c))
	if _, err := enc.Open("v", 1); err != nil {
		t.Fatal(err)
	}
	l := enc.Partition(0)
	if w, err := l.Append([]vertex.Message[string]{{ID: "a", Value: "x"}}); err != nil {
		t.Fatal(err)
	} else if _, err := w.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w, err := raw.Partition(0).Append([][]byte{[]byte("not an envelope")}); err != nil {
		t.Fatal(err)
	} else if _, err := w.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w, err := l.Append([]vertex.Message[string]{{ID: "c", Value: "z"}}); err != nil {
		t.Fatal(err)
	} else if _, err := w.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	buf := make([]vertex.Message[string], 3)
	_, got, err := l.Read(context.Background(), 0, 3, buf)
	if !errors.Is(err, isb.ErrCorrupt) || len(got) != 1 || got[0].ID != "a" || !strings.Contains(err.Error(), "offset 1") {
		t.Fatalf("Read = %d messages, %v; want message a, then a damaged record at offset 1", len(got), err)
	}
	_, got, err = l.Read(context.Background(), 2, 3, buf)
	if err != nil || len(got) != 1 || got[0].ID != "c" || got[0].Value != "z" {
		t.Fatalf("Read after the damaged record = %v, %v; want message c", got, err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
}
