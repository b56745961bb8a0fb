package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// newTestSource makes a source of cluster c with cfg (its Brokers and the
// test group options filled in), closed when the test ends.
func newTestSource(t testing.TB, c *kfake.Cluster, cfg SourceConfig) *Source {
	t.Helper()
	cfg.Brokers = c.ListenAddrs()
	cfg.ClientOptions = append(slices.Clip(testGroupOpts), cfg.ClientOptions...)
	s, err := NewSource(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// readBatches reads batches of up to max messages from s until it has n
// messages, within 30 seconds.
func readBatches(t testing.TB, s *Source, max, n int) [][]vertex.Message[[]byte] {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out [][]vertex.Message[[]byte]
	got := 0
	for got < n {
		b, err := s.Read(ctx, max)
		if err != nil {
			t.Fatalf("read after %d of %d messages: %v", got, n, err)
		}
		if len(b) > max {
			t.Fatalf("a read of at most %d returned %d", max, len(b))
		}
		if len(b) > 0 {
			out = append(out, b)
			got += len(b)
		}
	}
	if got != n {
		t.Fatalf("read %d messages, want %d", got, n)
	}
	return out
}

// ids returns the values of the batches' messages, in order.
func ids(batches ...[]vertex.Message[[]byte]) []string {
	var out []string
	for _, b := range batches {
		for _, m := range b {
			out = append(out, string(m.Value))
		}
	}
	return out
}

// idRange is "id-from" ... "id-(to-1)".
func idRange(from, to int) []string {
	out := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("id-%d", i))
	}
	return out
}

// A record's ID, event time, key, headers and value reach the message.
func TestSourceMessageFields(t *testing.T) {
	c := newCluster(t, 1, "t")
	at := time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	recs := []*kgo.Record{
		{Topic: "t", Key: []byte("k"), Value: []byte("v0"), Timestamp: at,
			Headers: []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("x")}, {Key: "a", Value: []byte("2")}}},
		{Topic: "t", Value: []byte("v1"), Timestamp: at.Add(time.Second)},
	}
	if err := client(t, c).ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	s := newTestSource(t, c, SourceConfig{Group: "g", Topics: []string{"t"}})
	got := slices.Concat(readBatches(t, s, 10, 2)...)
	m0, m1 := got[0], got[1]
	if m0.ID != "t/0/0" || m1.ID != "t/0/1" {
		t.Errorf("IDs %q %q, want t/0/0 t/0/1", m0.ID, m1.ID)
	}
	if !m0.EventTime.Equal(at) || !m1.EventTime.Equal(at.Add(time.Second)) {
		t.Errorf("event times %v %v, want %v and a second later", m0.EventTime, m1.EventTime, at)
	}
	if !slices.Equal(m0.Keys, []string{"k"}) || m1.Keys != nil {
		t.Errorf("keys %q %q, want [k] and none", m0.Keys, m1.Keys)
	}
	if want := map[string]string{"a": "2", "b": "x"}; !maps.Equal(m0.Headers, want) || m1.Headers != nil {
		t.Errorf("headers %v %v, want %v and none", m0.Headers, m1.Headers, want)
	}
	if string(m0.Value) != "v0" || string(m1.Value) != "v1" {
		t.Errorf("values %q %q", m0.Value, m1.Value)
	}
	if n := s.ReadPartitions(); n != 1 {
		t.Errorf("ReadPartitions %d, want 1", n)
	}
}

// The source commits a partition only up to its first batch not
// acknowledged: with the first batch unacknowledged nothing is committed,
// however much after it is, and a source started again in the group reads
// everything again; with the second unacknowledged, the commit stops at
// the end of the first and the next source resumes there.
func TestCommitStopsAtUnacknowledged(t *testing.T) {
	c := newCluster(t, 1, "t")
	produceIDs(t, client(t, c), "t", 0, 30, 3)
	cfg := SourceConfig{Group: "g", Topics: []string{"t"}}
	ctx := context.Background()

	// Run 1: every batch but the first acknowledged.
	s1 := newTestSource(t, c, cfg)
	b1 := readBatches(t, s1, 7, 30)
	if len(b1) < 3 {
		t.Fatalf("30 messages in %d batches of at most 7", len(b1))
	}
	for _, b := range b1[1:] {
		if err := s1.Ack(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := s1.commitDue(ctx); err != nil {
		t.Fatal(err)
	}
	if got := committed(t, c, "g", "t"); len(got) != 0 {
		t.Fatalf("committed %v with the first batch unacknowledged, want nothing", got)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	if got := committed(t, c, "g", "t"); len(got) != 0 {
		t.Fatalf("committed %v at Close with the first batch unacknowledged, want nothing", got)
	}

	// Run 2 reads all 30 again; all but its second batch acknowledged.
	s2 := newTestSource(t, c, cfg)
	b2 := readBatches(t, s2, 7, 30)
	if got := ids(b2...); !slices.Equal(got, idRange(0, 30)) {
		t.Fatalf("run 2 read %q, want id-0..id-29 again", got)
	}
	if len(b2) < 3 {
		t.Fatalf("30 messages in %d batches of at most 7", len(b2))
	}
	for i, b := range b2 {
		if i != 1 {
			if err := s2.Ack(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	first := len(b2[0])
	if got := committed(t, c, "g", "t"); !maps.Equal(got, map[int32]int64{0: int64(first)}) {
		t.Fatalf("committed %v, want partition 0 at %d (the end of the first batch)", got, first)
	}

	// Run 3 resumes at the end of run 2's first batch.
	s3 := newTestSource(t, c, cfg)
	b3 := readBatches(t, s3, 100, 30-first)
	if got := ids(b3...); !slices.Equal(got, idRange(first, 30)) {
		t.Fatalf("run 3 read %q, want id-%d..id-29", got, first)
	}
	for _, b := range b3 {
		if err := s3.Ack(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := s3.Close(); err != nil {
		t.Fatal(err)
	}
	if got := committed(t, c, "g", "t"); !maps.Equal(got, map[int32]int64{0: 30}) {
		t.Fatalf("committed %v, want partition 0 at 30", got)
	}
}

// The committer commits by itself, soon after the acknowledgements.
func TestCommitterCommits(t *testing.T) {
	c := newCluster(t, 2, "t")
	produceIDs(t, client(t, c), "t", 0, 40, 8)
	s := newTestSource(t, c, SourceConfig{Group: "g", Topics: []string{"t"}, CommitInterval: 10 * time.Millisecond})
	for _, b := range readBatches(t, s, 5, 40) {
		if err := s.Ack(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, "a commit of all 40 records", func() bool {
		got := committed(t, c, "g", "t")
		return got[0]+got[1] == 40
	})
}

// With StopAtEnd the source reads what the topic held when it was made
// and then ends, even though more was produced since; a run of the group
// after everything was committed ends at once, as does one over an empty
// topic.
func TestStopAtEnd(t *testing.T) {
	c := newCluster(t, 2, "t", "empty")
	cl := client(t, c)
	produceIDs(t, cl, "t", 0, 25, 5)
	cfg := SourceConfig{Group: "g", Topics: []string{"t"}, StopAtEnd: true}
	s := newTestSource(t, c, cfg)
	produceIDs(t, cl, "t", 25, 40, 5) // after the source listed the ends
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	for {
		b, err := s.Read(ctx, 4)
		got = append(got, ids(b)...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Ack(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(got)
	want := idRange(0, 25)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("read %q, want id-0..id-24", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := committed(t, c, "g", "t"); got[0]+got[1] != 25 {
		t.Fatalf("committed %v, want 25 records over both partitions", got)
	}

	// The group's next run: the 15 produced later, then the end.
	s2 := newTestSource(t, c, cfg)
	b := readBatches(t, s2, 100, 15)
	for _, x := range b {
		if err := s2.Ack(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s2.Read(ctx, 100); err != io.EOF {
		t.Fatalf("read after the end: %v, want io.EOF", err)
	}
	s2.Close()
	s3 := newTestSource(t, c, cfg)
	if b, err := s3.Read(ctx, 100); err != io.EOF || len(b) != 0 {
		t.Fatalf("run over a topic committed to its end read %d messages, err %v; want io.EOF at once", len(b), err)
	}
	s4 := newTestSource(t, c, SourceConfig{Group: "g4", Topics: []string{"empty"}, StopAtEnd: true})
	if b, err := s4.Read(ctx, 100); err != io.EOF || len(b) != 0 {
		t.Fatalf("run over an empty topic read %d messages, err %v; want io.EOF at once", len(b), err)
	}
}

// Each bad field is refused with an *OptionError naming it, and a topic
// that does not exist with ErrTopic.
func TestSourceConfigErrors(t *testing.T) {
	c := newCluster(t, 1, "t")
	ok := SourceConfig{Brokers: c.ListenAddrs(), Group: "g", Topics: []string{"t"}}
	for _, tc := range []struct {
		option string
		change func(*SourceConfig)
	}{
		{"Brokers", func(c *SourceConfig) { c.Brokers = nil }},
		{"Brokers", func(c *SourceConfig) { c.Brokers = []string{" "} }},
		{"Group", func(c *SourceConfig) { c.Group = "" }},
		{"Topics", func(c *SourceConfig) { c.Topics = nil }},
		{"Topics", func(c *SourceConfig) { c.Topics = []string{"a/b"} }},
		{"Topics", func(c *SourceConfig) { c.Topics = []string{"t", "t"} }},
		{"Start", func(c *SourceConfig) { c.Start = 7 }},
		{"PollInterval", func(c *SourceConfig) { c.PollInterval = -time.Second }},
		{"CommitInterval", func(c *SourceConfig) { c.CommitInterval = -time.Second }},
	} {
		cfg := ok
		tc.change(&cfg)
		_, err := NewSource(context.Background(), cfg)
		var oe *vertex.OptionError
		if !errors.As(err, &oe) || oe.Option != tc.option || oe.Package != "kafka" || !errors.Is(err, isb.ErrInvalidOption) {
			t.Errorf("%+v: error %v, want an option error naming %s", cfg, err, tc.option)
		}
	}
	cfg := ok
	cfg.Topics = []string{"missing"}
	if _, err := NewSource(context.Background(), cfg); !errors.Is(err, ErrTopic) {
		t.Errorf("a missing topic: %v, want ErrTopic", err)
	}
}

// An Ack of an ID the source did not make is ErrUnknownAck.
func TestUnknownAck(t *testing.T) {
	c := newCluster(t, 1, "t")
	s := newTestSource(t, c, SourceConfig{Group: "g", Topics: []string{"t"}})
	for _, id := range []string{"", "x", "t/0", "t/a/1", "/0/1", "t/-1/0"} {
		if err := s.Ack(context.Background(), []vertex.Message[[]byte]{{ID: id}}); !errors.Is(err, ErrUnknownAck) {
			t.Errorf("ack of %q: %v, want ErrUnknownAck", id, err)
		}
	}
}
