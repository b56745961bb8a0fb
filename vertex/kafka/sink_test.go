package kafka

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-dev/runnel/forwarder"
	"github.com/runnel-dev/runnel/internal/keys"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// newTestSink makes a sink of cluster c with cfg (its Brokers filled in),
// closed when the test ends.
func newTestSink(t testing.TB, c *kfake.Cluster, cfg SinkConfig) *Sink {
	t.Helper()
	cfg.Brokers = c.ListenAddrs()
	s, err := NewSink(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A message's value, keys, headers and event time reach the record: no
// key for no keys, the key for one, the unambiguous encoding for several.
func TestSinkRecordFields(t *testing.T) {
	c := newCluster(t, 1, "out")
	s := newTestSink(t, c, SinkConfig{Topic: "out"})
	at := time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	msgs := []vertex.Message[[]byte]{
		{ID: "a", Value: []byte("v0"), EventTime: at},
		{ID: "b", Value: []byte("v1"), EventTime: at, Keys: []string{"k"}, Headers: map[string]string{"z": "1", "a": "2"}},
		{ID: "c", Value: []byte("v2"), EventTime: at, Keys: []string{"a", "b"}},
	}
	res, err := s.Write(context.Background(), msgs)
	if err != nil || res != nil {
		t.Fatalf("write: %v %v, want every message OK", res, err)
	}
	recs := readAll(t, c, "out")
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for i, r := range recs {
		if string(r.Value) != "v"+strconv.Itoa(i) || !r.Timestamp.Equal(at) {
			t.Errorf("record %d: value %q time %v", i, r.Value, r.Timestamp)
		}
	}
	if recs[0].Key != nil {
		t.Errorf("a message without keys has the key %q, want none", recs[0].Key)
	}
	if string(recs[1].Key) != "k" {
		t.Errorf("key %q, want k", recs[1].Key)
	}
	if want := keys.Append(nil, []string{"a", "b"}); !slices.Equal(recs[2].Key, want) {
		t.Errorf("key of [a b] %q, want %q", recs[2].Key, want)
	}
	want := []kgo.RecordHeader{{Key: "a", Value: []byte("2")}, {Key: "z", Value: []byte("1")}}
	if got := recs[1].Headers; len(got) != 2 || got[0].Key != want[0].Key || string(got[0].Value) != "2" || got[1].Key != "z" || string(got[1].Value) != "1" {
		t.Errorf("headers %v, want %v", got, want)
	}
}

// A record the broker refuses is answered ResultRetry, and only that
// one: with the leader of partition 1 refusing every produce, the
// messages that went there are ResultRetry and missing from the topic,
// the others are ResultOK and in it.
func TestSinkRetriesFailedRecords(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(2), kfake.SeedTopics(2, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.LeaderFor("out", 0) == c.LeaderFor("out", 1) {
		var other int32
		for _, n := range []int32{0, 1} {
			if n != c.LeaderFor("out", 0) {
				other = n
			}
		}
		if err := c.MoveTopicPartition("out", 1, other); err != nil {
			t.Fatal(err)
		}
	}
	refuser := c.LeaderFor("out", 1)
	refuseProduce(c, func() bool { return c.CurrentNode() == refuser })
	s := newTestSink(t, c, SinkConfig{Topic: "out", DeliveryTimeout: 5 * time.Second})
	var msgs []vertex.Message[[]byte]
	for i := range 40 {
		msgs = append(msgs, vertex.Message[[]byte]{ID: strconv.Itoa(i), Keys: []string{"k" + strconv.Itoa(i)}, Value: []byte(strconv.Itoa(i))})
	}
	res, err := s.Write(context.Background(), msgs)
	var we *vertex.WriteError
	if !errors.As(err, &we) || len(we.Causes) != len(msgs) {
		t.Fatalf("write: %v, want a *vertex.WriteError with a cause per message", err)
	}
	if len(res) != len(msgs) {
		t.Fatalf("%d results for %d messages", len(res), len(msgs))
	}
	okVals, retries := map[string]bool{}, 0
	for i, r := range res {
		switch r {
		case vertex.ResultOK:
			okVals[string(msgs[i].Value)] = true
			if we.Causes[i] != nil {
				t.Errorf("message %d is OK with the cause %v", i, we.Causes[i])
			}
		case vertex.ResultRetry:
			retries++
			if !errors.Is(we.Causes[i], ErrProduce) || !errors.Is(we.Causes[i], kerr.InvalidRecord) {
				t.Errorf("message %d's cause %v, want ErrProduce wrapping INVALID_RECORD", i, we.Causes[i])
			}
		default:
			t.Fatalf("result %d is %v", i, r)
		}
	}
	if len(okVals) == 0 || retries == 0 {
		t.Fatalf("%d OK and %d retries: the keys did not spread over both partitions", len(okVals), retries)
	}
	if n := s.Failed(); n != int64(retries) {
		t.Errorf("Failed %d, want %d", n, retries)
	}
	got := map[string]bool{}
	for _, r := range readAll(t, c, "out") {
		if r.Partition != 0 {
			t.Errorf("a record on the refusing partition %d", r.Partition)
		}
		got[string(r.Value)] = true
	}
	if !maps.Equal(got, okVals) {
		t.Fatalf("the topic holds %v, want exactly the messages answered OK: %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(okVals)))
	}
}

// The source and sink are what the pipeline looks for, and default to
// retrying until the pipeline stops; the sink's vertex defaults to batches
// of sinkBatchSize.
func TestInterfaces(t *testing.T) {
	var (
		_ vertex.BufferedSource[[]byte]    = (*Source)(nil)
		_ vertex.PartitionedSource[[]byte] = (*Source)(nil)
		_ vertex.Acker[[]byte]             = (*Source)(nil)
		_ vertex.Sink[[]byte]              = (*Sink)(nil)
		_ vertex.OptionsDefaulter          = (*Sink)(nil)
	)
	for _, d := range []vertex.RetryDefaulter{(*Source)(nil), (*Sink)(nil)} {
		if got := d.DefaultRetry(); got != vertex.RemoteRetry {
			t.Errorf("%T.DefaultRetry() = %+v, want vertex.RemoteRetry", d, got)
		}
	}
	c, err := forwarder.NewVertexOptions((*Sink)(nil))
	if err != nil || c.BatchSize != sinkBatchSize {
		t.Errorf("the sink vertex's BatchSize: %d, %v; want %d", c.BatchSize, err, sinkBatchSize)
	}
}

// Each bad field is refused with an *OptionError naming it, a disabled
// idempotent producer included; a write after Close is ErrClosed.
func TestSinkConfigErrors(t *testing.T) {
	c := newCluster(t, 1, "out")
	ok := SinkConfig{Brokers: c.ListenAddrs(), Topic: "out"}
	for _, tc := range []struct {
		option string
		change func(*SinkConfig)
	}{
		{"Brokers", func(c *SinkConfig) { c.Brokers = nil }},
		{"Topic", func(c *SinkConfig) { c.Topic = "" }},
		{"Topic", func(c *SinkConfig) { c.Topic = "a b" }},
		{"DeliveryTimeout", func(c *SinkConfig) { c.DeliveryTimeout = -1 }},
		{"ClientOptions", func(c *SinkConfig) { c.ClientOptions = []kgo.Opt{kgo.DisableIdempotentWrite()} }},
	} {
		cfg := ok
		tc.change(&cfg)
		_, err := NewSink(cfg)
		var oe *vertex.OptionError
		if !errors.As(err, &oe) || oe.Option != tc.option || !errors.Is(err, isb.ErrInvalidOption) {
			t.Errorf("%s: error %v, want an option error naming it", tc.option, err)
		}
	}
	s, err := NewSink(ok)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := s.Write(context.Background(), []vertex.Message[[]byte]{{ID: "x"}}); !errors.Is(err, ErrClosed) {
		t.Errorf("write after Close: %v, want ErrClosed", err)
	}
}
