package kafka

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// upper is the test pipelines' map: "id-i" becomes "ID-i".
func upper(_ context.Context, v []byte) ([]byte, error) { return bytes.ToUpper(v), nil }

// countIDs counts the records of out per value, checking that each kept
// the key and header its input had ("id-i": key "k{i mod keys}", header
// n=i).
func countIDs(t testing.TB, recs []*kgo.Record, keys int) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, r := range recs {
		v := string(r.Value)
		counts[v]++
		i, err := strconv.Atoi(v[len("ID-"):])
		if err != nil {
			t.Fatalf("record value %q", v)
		}
		if want := "k" + strconv.Itoa(i%keys); string(r.Key) != want {
			t.Fatalf("%s has the key %q, want %q", v, r.Key, want)
		}
		if len(r.Headers) != 1 || r.Headers[0].Key != "n" || string(r.Headers[0].Value) != strconv.Itoa(i) {
			t.Fatalf("%s has the headers %v, want n=%d", v, r.Headers, i)
		}
	}
	return counts
}

// kafkaPipeline is topic "in" -> source (2 replicas) -> map upper (2
// replicas) -> sink (2 replicas) -> topic "out" on brokers, the source
// stopping at the end of "in"; member adds client options of the
// source's group member to testGroupOpts, and wrap, when set, wraps the
// sink.
func kafkaPipeline(brokers []string, group string, member []kgo.Opt, wrap func(*Sink) vertex.Sink[[]byte], opts ...pipeline.Option) (*pipeline.Pipeline, error) {
	src, err := NewSource(context.Background(), SourceConfig{
		Brokers: brokers, Group: group, Topics: []string{"in"}, StopAtEnd: true,
		ClientOptions: append(append([]kgo.Opt(nil), testGroupOpts...), member...),
	})
	if err != nil {
		return nil, err
	}
	sink, err := NewSink(SinkConfig{Brokers: brokers, Topic: "out"})
	if err != nil {
		src.Close()
		return nil, err
	}
	p := pipeline.New("kafka", opts...)
	in := pipeline.Source(p, "in", src, vertex.Replicas(2), vertex.BatchSize(100))
	up := pipeline.Map(p, "upper", in, upper, vertex.Replicas(2), vertex.BatchSize(100))
	var out vertex.Sink[[]byte] = sink
	if wrap != nil {
		out = wrap(sink)
	}
	pipeline.Sink(p, "out", up, out, vertex.Replicas(2), vertex.BatchSize(100))
	return p, nil
}

// Kafka -> runnel -> Kafka: every record of the input topic reaches the
// output topic exactly once (no failure, so no repetition), with its key
// and header, and the group is committed to the input's end.
func TestPipelineKafkaToKafka(t *testing.T) {
	const n, keys = 5000, 16
	c := newCluster(t, 4, "in", "out")
	produceIDs(t, client(t, c), "in", 0, n, keys)
	p, err := kafkaPipeline(c.ListenAddrs(), "copy", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	counts := countIDs(t, readAll(t, c, "out"), keys)
	for i := range n {
		if got := counts["ID-"+strconv.Itoa(i)]; got != 1 {
			t.Fatalf("ID-%d reached the output %d times, want once", i, got)
		}
	}
	if len(counts) != n {
		t.Fatalf("%d distinct values in the output, want %d", len(counts), n)
	}
	var sum int64
	for _, o := range committed(t, c, "copy", "in") {
		sum += o
	}
	if sum != n {
		t.Fatalf("the group committed %d records, want all %d", sum, n)
	}
}
