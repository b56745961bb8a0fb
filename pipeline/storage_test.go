package pipeline

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/forwarder"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/codec"
	"github.com/runnel-dev/runnel/vertex"
)

func TestStorageOptionsRefused(t *testing.T) {
	cases := map[string]struct {
		opt  Option
		want string
	}{
		"empty data dir":           {WithStorage(MMap("")), `pipeline: option MMap: needs a directory (got "")`},
		"negative commit interval": {CommitInterval(-time.Second), "pipeline: option CommitInterval: must not be negative (got -1s)"},
		"nil codec":                {WithCodec[int](nil), "pipeline: option WithCodec for int: the codec must not be nil (got <nil>)"},
	}
	for name, tc := range cases {
		_, err := newConfig([]Option{tc.opt})
		if !errors.Is(err, ErrInvalidOption) || err == nil || err.Error() != tc.want {
			t.Errorf("%s: err = %v, want ErrInvalidOption saying %q", name, err, tc.want)
		}
	}
	c, err := newConfig(nil)
	if err != nil || c.storage.String() != "memory" || c.storage.Durable() {
		t.Fatalf("default storage = %v (%v), want memory", c.storage, err)
	}
}

// ackedSlice is a slice source that records what the pipeline acknowledged.
type ackedSlice struct {
	vertex.Source[int]
	mu    sync.Mutex
	acked map[string]bool
}

func (s *ackedSlice) Ack(_ context.Context, msgs []vertex.Message[int]) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		s.acked[m.ID] = true
	}
	return nil
}

// TestDurablePipelineResumesAfterFailure runs source -> map -> sink on
// mmap storage until the sink fails the run, then runs it again on the
// same directory with an empty source: every message the source had
// acknowledged (written to the first buffer) reaches the sink in one run
// or the other, with the value the codecs stored.
func TestDurablePipelineResumesAfterFailure(t *testing.T) {
	dir := t.TempDir()
	const n = 5000
	run := func(src vertex.Source[int], sink vertex.Sink[string]) error {
		p := New("resume", WithStorage(MMap(dir)), WithCodec(codec.MsgPack[string]()))
		s := Source(p, "src", src, vertex.BatchSize(100))
		m := Map(p, "fmt", s, func(_ context.Context, v int) (string, error) { return "v" + strconv.Itoa(v), nil })
		Sink(p, "sink", m, sink, vertex.BatchSize(50), vertex.Concurrency(1),
			vertex.Retry(vertex.RetryPolicy{MaxAttempts: 1}))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return p.Run(ctx)
	}
	delivered := map[string]int{}
	var mu sync.Mutex
	calls := 0
	errStop := errors.New("sink stops the run")
	sink := vertex.SinkFunc[string](func(_ context.Context, msgs []vertex.Message[string]) ([]vertex.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls > 5 {
			return nil, errStop
		}
		for _, m := range msgs {
			if want := "v" + m.ID; m.Value != want {
				t.Errorf("message %s: value %q, want %q", m.ID, m.Value, want)
			}
			delivered[m.ID]++
		}
		return nil, nil
	})
	vals := make([]int, n)
	for i := range vals {
		vals[i] = i
	}
	src := &ackedSlice{Source: vertex.FromSlice(vals), acked: map[string]bool{}}
	if err := run(src, sink); !errors.Is(err, errStop) {
		t.Fatalf("first run: %v, want the sink's error", err)
	}
	first := len(delivered)
	if first == 0 || len(src.acked) <= first {
		t.Fatalf("first run: the sink got %d, the source acknowledged %d: nothing left in the buffers to resume", first, len(src.acked))
	}
	calls = -1 << 30 // the sink no longer fails
	if err := run(vertex.FromSlice[int](nil), sink); err != nil {
		t.Fatalf("second run: %v", err)
	}
	dups := 0
	for id := range src.acked {
		switch c := delivered[id]; {
		case c == 0:
			t.Errorf("message %s was acknowledged to the source and never delivered", id)
		case c > 1:
			dups += c - 1
		}
	}
	for id := range delivered {
		if !src.acked[id] {
			t.Errorf("message %s delivered, never acknowledged to the source", id)
		}
	}
	t.Logf("source acknowledged %d, first run delivered %d, both runs %d ids, %d duplicates", len(src.acked), first, len(delivered), dups)
}

// TestMMapBufferKeepsTheEnvelope writes messages with every field (a
// control message among them) to a buffer on mmap storage, closes it as a
// stopping pipeline does and reopens it: the consumer group resumes at its
// commit and every stored field comes back exactly, the reader's
// Watermark and Late never.
func TestMMapBufferKeepsTheEnvelope(t *testing.T) {
	ctx := context.Background()
	c, err := newConfig([]Option{WithStorage(MMap(t.TempDir())), WithCodec(codec.MsgPack[string]())})
	if err != nil {
		t.Fatal(err)
	}
	spec := BufferSpec{Pipeline: "p", Vertex: "v", Partitions: 1, Capacity: 100}
	et := time.Date(2026, 11, 30, 12, 0, 0, 7, time.UTC)
	msgs := []vertex.Message[string]{
		{ID: "consumed", Value: "x"},
		{ID: "a", EventTime: et, Keys: []string{"k1", "k2"}, Tags: []string{"t1", "t2"},
			Headers: map[string]string{"h": "v"}, Value: "payload", Watermark: et, Late: true},
		{Tags: []string{forwarder.ControlTag}},
		{ID: "b", Tags: []string{vertex.ReservedTagPrefix + "eos", "user"}, Value: ""},
	}
	topic, err := openTopic[string](&c, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := topic.Producer(nil).ProduceBatch(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	cons, err := topic.PullConsumer("v", isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cons.Pull(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cons.CommitTo(0, 1); err != nil {
		t.Fatal(err)
	}
	cons.Close()
	if err := topic.Close(); err != nil {
		t.Fatal(err)
	}

	topic, err = openTopic[string](&c, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer topic.Close()
	cons, err = topic.PullConsumer("v", isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	b, err := cons.Pull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b.Offset != 1 || len(b.Items) != 3 {
		t.Fatalf("after reopen: %d items from offset %d, want 3 from the commit at 1", len(b.Items), b.Offset)
	}
	for i, got := range b.Items {
		want := msgs[i+1]
		want.Watermark, want.Late = time.Time{}, false // the reader's, not stored
		if got.ID != want.ID || !got.EventTime.Equal(want.EventTime) || got.Value != want.Value ||
			!reflect.DeepEqual(got.Keys, want.Keys) || !reflect.DeepEqual(got.Tags, want.Tags) ||
			!reflect.DeepEqual(got.Headers, want.Headers) || !got.Watermark.IsZero() || got.Late {
			t.Errorf("message %d after reopen:\n got %+v\nwant %+v", i+1, got, want)
		}
	}
	if !b.Items[1].HasTag(forwarder.ControlTag) {
		t.Error("the control message lost its tag")
	}
}
