package forwarder

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/memory"
	"github.com/runnel-dev/runnel/vertex"
)

func newTopic(t *testing.T, name string, opts ...isb.TopicOption) *isb.Topic[msg] {
	t.Helper()
	topic, err := memory.NewTopic[msg](name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = topic.Close() })
	return topic
}

// drain reads every item of topic, per partition.
func drain(t *testing.T, topic *isb.Topic[msg]) map[int][]msg {
	t.Helper()
	c, err := topic.PullConsumer("check", isb.BatchSize(1000))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out := map[int][]msg{}
	for topic.Pending("check") > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		b, err := c.Pull(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		out[b.Partition] = append(out[b.Partition], b.Items...)
		if err := c.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func ids(ms []msg) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func TestWriterConditionsAndDrops(t *testing.T) {
	onlyX, all := newTopic(t, "x"), newTopic(t, "all")
	c := &Counters{}
	w := NewWriter([]Edge[int]{{To: "x", Topic: onlyX, When: vertex.AnyTag("x")}, {To: "all", Topic: all}}, c, nil, nil)
	in := []msg{
		{ID: "x", Tags: []string{"x"}},
		{ID: "y", Tags: []string{"y"}},
		{ID: "drop", Tags: []string{"x", vertex.DropTag}},
		{ID: "none"},
	}
	if err := w.Write(context.Background(), in, &WriteBuffer[int]{}); err != nil {
		t.Fatal(err)
	}
	if got := ids(drain(t, onlyX)[0]); !slices.Equal(got, []string{"x"}) {
		t.Errorf("edge x got %v", got)
	}
	if got := ids(drain(t, all)[0]); !slices.Equal(got, []string{"x", "y", "none"}) {
		t.Errorf("edge all got %v", got)
	}
	if s := c.Snapshot(); s.Written != 4 || s.Dropped != 1 {
		t.Errorf("written %d dropped %d, want 4 and 1", s.Written, s.Dropped)
	}

	// With only a conditional edge, a message no edge carries is dropped.
	c2 := &Counters{}
	w2 := NewWriter([]Edge[int]{{To: "x", Topic: newTopic(t, "x2"), When: vertex.AnyTag("x")}}, c2, nil, nil)
	if err := w2.Write(context.Background(), in, &WriteBuffer[int]{}); err != nil {
		t.Fatal(err)
	}
	if s := c2.Snapshot(); s.Written != 1 || s.Dropped != 3 {
		t.Errorf("written %d dropped %d, want 1 and 3", s.Written, s.Dropped)
	}
}

func TestWriterRoutesByKeyAndRoundRobin(t *testing.T) {
	keyed, rr := newTopic(t, "keyed", isb.Partitions(4)), newTopic(t, "rr", isb.Partitions(3))
	w := NewWriter([]Edge[int]{{To: "keyed", Topic: keyed, ByKey: true}}, &Counters{}, nil, nil)
	buf := &WriteBuffer[int]{}
	var in []msg
	for i := range 200 {
		in = append(in, msg{ID: string(rune('a' + i%10)), Keys: []string{string(rune('a' + i%10))}, Value: i})
	}
	for k := 0; k < len(in); k += 25 {
		if err := w.Write(context.Background(), in[k:k+25], buf); err != nil {
			t.Fatal(err)
		}
	}
	where := map[string]int{}
	total := 0
	for p, ms := range drain(t, keyed) {
		for i, m := range ms {
			if q, ok := where[m.Keys[0]]; ok && q != p {
				t.Fatalf("key %s in partitions %d and %d", m.Keys[0], q, p)
			}
			where[m.Keys[0]] = p
			if i > 0 && ms[i-1].Keys[0] == m.Keys[0] && ms[i-1].Value > m.Value {
				t.Fatalf("key %s out of order in partition %d", m.Keys[0], p)
			}
		}
		total += len(ms)
	}
	if total != 200 || len(where) != 10 {
		t.Fatalf("%d messages, %d keys, want 200 and 10", total, len(where))
	}

	w2 := NewWriter([]Edge[int]{{To: "rr", Topic: rr}}, &Counters{}, nil, nil)
	for i := range 6 {
		if err := w2.Write(context.Background(), []msg{{Value: i}}, buf); err != nil {
			t.Fatal(err)
		}
	}
	for p, ms := range drain(t, rr) {
		if len(ms) != 2 {
			t.Errorf("round robin: partition %d got %d, want 2", p, len(ms))
		}
	}
}

func TestWriterDiscardLatestWhenFull(t *testing.T) {
	full := newTopic(t, "full", isb.Capacity(3))
	c := &Counters{}
	pub := &fakePublisher{}
	w := NewWriter([]Edge[int]{{To: "full", Topic: full, Discard: true}}, c, pub, func() time.Time { return time.Unix(42, 0) })
	if err := w.Write(context.Background(), values(5), &WriteBuffer[int]{}); err != nil {
		t.Fatal(err)
	}
	if got := ids(drain(t, full)[0]); !slices.Equal(got, []string{"0", "1", "2"}) {
		t.Errorf("kept %v, want the first 3", got)
	}
	if s := c.Snapshot(); s.Written != 3 || s.Dropped != 2 {
		t.Errorf("written %d dropped %d, want 3 and 2", s.Written, s.Dropped)
	}
	// One publish, at the offset of the last item kept.
	if len(pub.calls) != 1 || pub.calls[0] != (pubCall{"full", 0, 2, 42}) {
		t.Errorf("publisher calls %v", pub.calls)
	}
}

type pubCall struct {
	to        string
	partition int
	offset    int64
	wm        int64
}

type fakePublisher struct {
	mu    sync.Mutex
	calls []pubCall
}

func (f *fakePublisher) Publish(to string, partition int, offset int64, wm time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, pubCall{to, partition, offset, wm.Unix()})
}

// The publisher learns the offset of the last item of each write, exact
// also when another writer appended to the partition in between;
// WriteControl appends a control message and returns its offset.
func TestWriterOffsetsAndControl(t *testing.T) {
	backend, err := memory.New[msg]()
	if err != nil {
		t.Fatal(err)
	}
	topic, err := isb.NewTopic[msg]("tailed", backend, isb.Partitions(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = topic.Close() })
	pub := &fakePublisher{}
	w := NewWriter([]Edge[int]{{To: "next", Topic: topic}},
		&Counters{}, pub, func() time.Time { return time.Unix(9, 0) })
	buf := &WriteBuffer[int]{}
	for range 2 {
		if err := w.Write(context.Background(), values(3), buf); err != nil {
			t.Fatal(err)
		}
		// Another writer appends two items to partition 1 after each write:
		// the next write to partition 1 must not be told their offsets.
		if err := topic.Producer(isb.BySelector(func(msg, int) int { return 1 })).ProduceBatch(context.Background(), values(2)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Write(context.Background(), values(1), buf); err != nil {
		t.Fatal(err)
	}
	// Round-robin: partition 1 (offsets 0-2), 0 (0-2), then 1 again at
	// offset 7 (3 to 6 are the other writer's).
	want := []pubCall{{"next", 1, 2, 9}, {"next", 0, 2, 9}, {"next", 1, 7, 9}}
	if !slices.Equal(pub.calls, want) {
		t.Fatalf("publisher calls %v, want %v", pub.calls, want)
	}
	off, err := w.WriteControl(context.Background(), "next", 1)
	if err != nil || off != 8 {
		t.Fatalf("WriteControl: offset %d, %v; want 8", off, err)
	}
	if got := drain(t, topic)[1]; len(got) != 9 || !got[8].HasTag(ControlTag) {
		t.Fatalf("partition 1 holds %v", got)
	}
	if _, err := w.WriteControl(context.Background(), "elsewhere", 0); !errors.Is(err, ErrNoSuchEdge) {
		t.Fatalf("WriteControl to an unknown edge: %v", err)
	}
	if _, err := w.WriteControl(context.Background(), "next", 2); !errors.Is(err, ErrNoSuchEdge) {
		t.Fatalf("WriteControl to a partition out of range: %v", err)
	}
}

// A message tagged ControlTag by user code would be skipped by the reader
// downstream as a control message: the writer refuses the whole write
// (nothing is written), naming the message.
func TestWriterRefusesControlTag(t *testing.T) {
	out := newTopic(t, "out")
	c := &Counters{}
	w := NewWriter([]Edge[int]{{To: "out", Topic: out}}, c, nil, nil)
	in := []msg{{ID: "ok"}, {ID: "sneaky", Tags: []string{"a", ControlTag}}}
	err := w.Write(context.Background(), in, &WriteBuffer[int]{})
	if !errors.Is(err, ErrReservedTag) || err.Error() != `forwarder: message carries a reserved tag: message "sneaky" is tagged "runnel/control"` {
		t.Fatalf("Write = %v; want ErrReservedTag naming sneaky", err)
	}
	if got := drain(t, out); len(got) != 0 {
		t.Errorf("written %v; want nothing", got)
	}
	if s := c.Snapshot(); s.Written != 0 {
		t.Errorf("written %d; want 0", s.Written)
	}
}

// endMsg is an end-of-stream message as a reader sees it.
type endMsg struct {
	processor string
	kind      EndKind
}

// splitEnd returns the data messages of one partition and its end of
// stream (zero when none); the end must be the last message and alone.
func splitEnd(t *testing.T, ms []msg) (data []msg, end endMsg) {
	t.Helper()
	for i := range ms {
		proc, kind, ok := EndOf(&ms[i])
		if !ok {
			data = append(data, ms[i])
			continue
		}
		if i != len(ms)-1 {
			t.Errorf("end of stream of %s at position %d of %d: not the last message", proc, i, len(ms))
		}
		end = endMsg{proc, kind}
	}
	return data, end
}

// A keyed write is routed by the isb: the publisher is told, for each
// partition the write reached, the offset of its last message there; under
// discarding, the messages that fit are kept in order and the rest
// dropped, and the publisher learns only what was kept.
func TestWriterKeyedPublishesPerPartition(t *testing.T) {
	keyed := newTopic(t, "keyed", isb.Partitions(2), isb.Capacity(5))
	route := isb.ByKeys(keysOf[int])
	c, pub := &Counters{}, &fakePublisher{}
	w := NewWriter([]Edge[int]{{To: "keyed", Topic: keyed, ByKey: true, Discard: true}}, c, pub, func() time.Time { return time.Unix(7, 0) })
	var in []msg
	want := map[int][]string{}
	for i := range 8 {
		m := msg{ID: strconv.Itoa(i), Keys: []string{"k" + strconv.Itoa(i)}, Value: i}
		in = append(in, m)
		if i < 5 { // the capacity: the first 5 are kept
			p, err := route.Route(m, 2, 0)
			if err != nil {
				t.Fatal(err)
			}
			want[p] = append(want[p], m.ID)
		}
	}
	if len(want[0]) == 0 || len(want[1]) == 0 {
		t.Fatalf("keys k0-k4 all route to one partition (%v): the test needs both", want)
	}
	if err := w.Write(context.Background(), in, &WriteBuffer[int]{}); err != nil {
		t.Fatal(err)
	}
	got := drain(t, keyed)
	for p := range 2 {
		if ids := ids(got[p]); !slices.Equal(ids, want[p]) {
			t.Errorf("partition %d holds %v, want %v", p, ids, want[p])
		}
	}
	if s := c.Snapshot(); s.Written != 5 || s.Dropped != 3 {
		t.Errorf("written %d dropped %d, want 5 and 3", s.Written, s.Dropped)
	}
	wantCalls := []pubCall{{"keyed", 0, int64(len(want[0]) - 1), 7}, {"keyed", 1, int64(len(want[1]) - 1), 7}}
	if !slices.Equal(pub.calls, wantCalls) {
		t.Errorf("publisher calls %v, want %v", pub.calls, wantCalls)
	}
}
