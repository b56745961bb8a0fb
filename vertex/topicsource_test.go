package vertex_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/memory"
	"github.com/runnel-dev/runnel/isb/mmap"
	"github.com/runnel-dev/runnel/vertex"
)

func ids[T any](ms []vertex.Message[T]) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// TestTopicSourceResumesAfterAcks reads a durable topic, acknowledges some
// batches out of order, closes everything as a stopped process would and
// reopens: the new source starts at the first batch not acknowledged, and
// what was acknowledged after a gap is read again (at least once).
func TestTopicSourceResumesAfterAcks(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func() *isb.Topic[int] {
		topic, err := mmap.NewTopic[int](dir, "in", mmap.Topic(isb.Partitions(1)))
		if err != nil {
			t.Fatal(err)
		}
		return topic
	}
	topic := open()
	vals := make([]int, 10)
	for i := range vals {
		vals[i] = 100 + i
	}
	if err := topic.Producer(nil).ProduceBatch(ctx, vals); err != nil {
		t.Fatal(err)
	}
	src := vertex.FromTopic(topic, "g").EndWhenEmpty()
	if err := src.Validate(); err != nil {
		t.Fatal(err)
	}
	// Batches of 3 (the consumer's batch is the first max asked).
	var batches [][]vertex.Message[int]
	for range 3 {
		b, err := src.Read(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
	}
	if got := ids(batches[1]); len(got) != 3 || got[0] != "0-3" || got[2] != "0-5" || batches[1][0].Value != 103 {
		t.Fatalf("second batch %v (value %d), want IDs 0-3..0-5, value 103", got, batches[1][0].Value)
	}
	// The second batch first: nothing may be committed past the first.
	if err := src.Ack(ctx, batches[1]); err != nil {
		t.Fatal(err)
	}
	if p := topic.Pending("g"); p != 10 {
		t.Fatalf("pending after an ack behind an unacked batch = %d, want 10", p)
	}
	if err := src.Ack(ctx, batches[0]); err != nil {
		t.Fatal(err)
	}
	if p := topic.Pending("g"); p != 4 {
		t.Fatalf("pending after acking the first two batches = %d, want 4", p)
	}
	if err := src.Ack(ctx, batches[0]); !errors.Is(err, vertex.ErrUnknownAck) {
		t.Fatalf("second ack of a batch: err %v, want ErrUnknownAck", err)
	}
	// The third batch stays unacked: a restart reads it again.
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if err := topic.Close(); err != nil {
		t.Fatal(err)
	}
	topic = open()
	defer topic.Close()
	src = vertex.FromTopic(topic, "g").EndWhenEmpty()
	defer src.Close()
	var got []string
	for {
		b, err := src.Read(ctx, 100)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ids(b)...)
		if err := src.Ack(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"0-6", "0-7", "0-8", "0-9"}
	if len(got) != len(want) {
		t.Fatalf("after restart read %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("after restart read %v, want %v", got, want)
		}
	}
	if p := topic.Pending("g"); p != 0 {
		t.Fatalf("pending at the end = %d, want 0", p)
	}
}

func TestTopicSourceSmallerMaxKeepsTheRest(t *testing.T) {
	ctx := context.Background()
	topic, err := isb.NewTopic[int]("t", mustMemory[int](t))
	if err != nil {
		t.Fatal(err)
	}
	defer topic.Close()
	if err := topic.Producer(nil).ProduceBatch(ctx, []int{0, 1, 2, 3, 4, 5, 6, 7, 8}); err != nil {
		t.Fatal(err)
	}
	src := vertex.FromTopic(topic, "g").EndWhenEmpty()
	defer src.Close()
	// The consumer pulls 5 at a time; reads asking for 2 hand a pull on
	// in pieces, contiguous, and each piece is acknowledged on its own.
	var got []string
	for _, max := range []int{5, 2, 2} {
		b, err := src.Read(ctx, max)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > max {
			t.Fatalf("read of at most %d returned %d", max, len(b))
		}
		got = append(got, ids(b)...)
		if err := src.Ack(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := src.Read(ctx, 5); !errors.Is(err, io.EOF) {
		t.Fatalf("read of an empty topic with EndWhenEmpty: %v, want io.EOF", err)
	}
	want := "[0-0 0-1 0-2 0-3 0-4 0-5 0-6 0-7 0-8]"
	if fmt.Sprint(got) != want {
		t.Fatalf("read %v, want %s", got, want)
	}
	if p := topic.Pending("g"); p != 0 {
		t.Fatalf("pending = %d, want 0", p)
	}
}

func TestTopicSourceValidate(t *testing.T) {
	cases := map[string]*vertex.TopicSource[int]{
		"nil topic":     vertex.FromTopic[int](nil, "g"),
		"zero interval": vertex.FromTopic(&isb.Topic[int]{}, "g").WithPollInterval(0),
		"no group":      vertex.FromTopic(&isb.Topic[int]{}, ""),
	}
	for name, s := range cases {
		var oe *vertex.OptionError
		if err := s.Validate(); !errors.As(err, &oe) {
			t.Errorf("%s: Validate() = %v, want an *OptionError", name, err)
		}
	}
}

func mustMemory[T any](t *testing.T) isb.Backend[T] {
	t.Helper()
	b, err := memory.New[T]()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// view is a timestamped, keyed record as a user keeps it in a topic.
type view struct {
	Page string
	At   time.Time
}

// WithEventTime and WithKeys give each message the time and keys of its
// item; an item with a zero time gets the read time, as before.
func TestTopicSourceEventTimeAndKeys(t *testing.T) {
	ctx := context.Background()
	topic, err := memory.NewTopic[view]("views")
	if err != nil {
		t.Fatal(err)
	}
	defer topic.Close()
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	items := []view{{"home", at}, {"cart", at.Add(time.Minute)}, {"home", time.Time{}}}
	if err := topic.Producer(nil).ProduceBatch(ctx, items); err != nil {
		t.Fatal(err)
	}
	src := vertex.FromTopic(topic, "g").EndWhenEmpty().
		WithEventTime(func(v view) time.Time { return v.At }).
		WithKeys(func(v view) []string { return []string{v.Page} })
	defer src.Close()
	before := time.Now()
	msgs, err := src.Read(ctx, 10)
	if err != nil || len(msgs) != 3 {
		t.Fatalf("Read: %d messages, %v", len(msgs), err)
	}
	for i, m := range msgs {
		if len(m.Keys) != 1 || m.Keys[0] != items[i].Page {
			t.Errorf("message %s: keys %q, want [%s]", m.ID, m.Keys, items[i].Page)
		}
	}
	if !msgs[0].EventTime.Equal(at) || !msgs[1].EventTime.Equal(at.Add(time.Minute)) {
		t.Errorf("event times %v, %v; want the items' %v, %v", msgs[0].EventTime, msgs[1].EventTime, at, at.Add(time.Minute))
	}
	if et := msgs[2].EventTime; et.Before(before) {
		t.Errorf("an item without a time got event time %v, want the read time (after %v)", et, before)
	}
}
