package jetstream

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// upper is the test pipelines' map: "id-i" becomes "ID-i".
func upper(_ context.Context, v []byte) ([]byte, error) { return bytes.ToUpper(v), nil }

// countIDs counts the messages per value, checking that each kept the
// key and header its input had ("id-i": key "k{i mod keys}", header n=i)
// and carries the source's ID as Nats-Msg-Id.
func countIDs(t testing.TB, msgs []natsjs.Msg, keys int) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, m := range msgs {
		v := string(m.Data())
		counts[v]++
		i, err := strconv.Atoi(v[len("ID-"):])
		if err != nil {
			t.Fatalf("message value %q", v)
		}
		h := m.Headers()
		if want := "k" + strconv.Itoa(i%keys); h.Get(KeyHeader) != want {
			t.Fatalf("%s has the key %q, want %q", v, h.Get(KeyHeader), want)
		}
		if h.Get("n") != strconv.Itoa(i) || h.Get(EventTimeHeader) == "" || h.Get(MsgIDHeader) == "" {
			t.Fatalf("%s has the headers %v, want n=%d, an event time and a message ID", v, h, i)
		}
	}
	return counts
}

// jsPipeline is stream "in" -> source (durable, 2 replicas) -> map upper
// (2 replicas) -> sink (2 replicas) -> stream "out", the source stopping
// at the end of "in"; wrap, when set, wraps the sink.
func jsPipeline(nc *nats.Conn, durable string, ackWait time.Duration, wrap func(*Sink) vertex.Sink[[]byte], opts ...pipeline.Option) (*pipeline.Pipeline, *Source, error) {
	src, err := NewSource(context.Background(), SourceConfig{
		Conn: nc, Stream: "in", Durable: durable, StopAtEnd: true, AckWait: ackWait,
	})
	if err != nil {
		return nil, nil, err
	}
	sink, err := NewSink(SinkConfig{Conn: nc, Subject: "out"})
	if err != nil {
		src.Close()
		return nil, nil, err
	}
	p := pipeline.New("jetstream", opts...)
	in := pipeline.Source(p, "in", src, vertex.Replicas(2), vertex.BatchSize(100))
	up := pipeline.Map(p, "upper", in, upper, vertex.Replicas(2), vertex.BatchSize(100))
	var out vertex.Sink[[]byte] = sink
	if wrap != nil {
		out = wrap(sink)
	}
	pipeline.Sink(p, "out", up, out, vertex.Replicas(2), vertex.BatchSize(100))
	return p, src, nil
}

// JetStream -> runnel -> JetStream: every message of stream "in" reaches
// stream "out" exactly once (no failure, so no repetition), with its key
// and header, and the consumer has acknowledged all of "in".
func TestPipelineStreamToStream(t *testing.T) {
	const n, keys = 10000, 16
	srv := natstest.Start(t)
	nc := srv.Connect()
	js := newJS(t, nc)
	createStream(t, js, "in")
	createStream(t, js, "out")
	publishIDs(t, js, "in", 0, n, keys)
	p, src, err := jsPipeline(nc, "copy", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	counts := countIDs(t, readStream(t, js, "out"), keys)
	for i := range n {
		if got := counts["ID-"+strconv.Itoa(i)]; got != 1 {
			t.Fatalf("ID-%d reached the output %d times, want once", i, got)
		}
	}
	if len(counts) != n {
		t.Fatalf("%d distinct values in the output, want %d", len(counts), n)
	}
	if r := src.Redelivered(); r != 0 {
		t.Fatalf("%d messages delivered again without a failure", r)
	}
	info, err := js.Consumer(ctx, "in", "copy")
	if err != nil {
		t.Fatal(err)
	}
	if ci := info.CachedInfo(); ci.AckFloor.Stream != n || ci.NumAckPending != 0 || ci.NumPending != 0 {
		t.Fatalf("consumer at ack floor %d, %d pending, %d awaiting acknowledgement; want %d, 0, 0",
			ci.AckFloor.Stream, ci.NumPending, ci.NumAckPending, n)
	}
}
