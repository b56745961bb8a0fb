package jetstream

import (
	"bytes"
	"context"
	"errors"
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

// A message held in flight for several AckWaits is not delivered again:
// the source keeps it in progress, and the messages it has queued and not
// yet handed out too. A batch of 10 of 50 is read and held
// unacknowledged for three AckWaits and a half while the other 40 wait in
// the queue (the server would have delivered all 50 again three times
// without the keeper); then the 40 are read, all 50 acknowledged, and
// neither the consumer nor the source counts a redelivery.
func TestInProgressPastAckWait(t *testing.T) {
	const n, first = 50, 10
	const ackWait = 300 * time.Millisecond
	srv := natstest.Start(t)
	nc := srv.Connect()
	js := newJS(t, nc)
	createStream(t, js, "in")
	publishIDs(t, js, "in", 0, n, 1)
	src, err := NewSource(context.Background(), SourceConfig{Conn: nc, Stream: "in", Durable: "slow", AckWait: ackWait})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx := context.Background()
	waitFor(t, 10*time.Second, "every message in the source's queue", func() bool { return len(src.q.C) == n })
	held, err := src.Read(ctx, first)
	if err != nil || len(held) != first {
		t.Fatalf("read %d messages (%v), want %d", len(held), err, first)
	}
	time.Sleep(ackWait*3 + ackWait/2)
	if q := len(src.q.C); q != n-first {
		t.Fatalf("%d messages queued after the wait, want the %d not read: some were delivered again", q, n-first)
	}
	rest, err := src.Read(ctx, n)
	if err != nil || len(rest) != n-first {
		t.Fatalf("read %d messages (%v), want the %d left", len(rest), err, n-first)
	}
	for _, b := range [][]vertex.Message[[]byte]{held, rest} {
		if err := src.Ack(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := js.Consumer(ctx, "in", "slow")
	if err != nil {
		t.Fatal(err)
	}
	var info *natsjs.ConsumerInfo
	waitFor(t, 10*time.Second, "every acknowledgement at the server", func() bool {
		info, err = cons.Info(ctx)
		return err == nil && info.NumAckPending == 0
	})
	if info.NumRedelivered != 0 || src.Redelivered() != 0 || info.AckFloor.Stream != n {
		t.Fatalf("consumer: %d redelivered, ack floor %d; source: %d redelivered; want 0, %d, 0",
			info.NumRedelivered, info.AckFloor.Stream, src.Redelivered(), n)
	}
}

// A message NATS cannot carry goes to the fallback with ErrHeader as its
// cause; a subject SubjectOf gets wrong, with ErrSubject; the others of
// the batch are stored.
func TestSinkRefusesWhatNATSCannotCarry(t *testing.T) {
	srv := natstest.Start(t)
	nc := srv.Connect()
	js := newJS(t, nc)
	createStream(t, js, "out")
	sink, err := NewSink(SinkConfig{Conn: nc, SubjectOf: func(m *vertex.Message[[]byte]) string { return "out" + m.Headers["sub"] }})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	msgs := []vertex.Message[[]byte]{
		{ID: "a", Value: []byte("ok")},
		{ID: "b", Keys: []string{"line\nbreak"}},
		{ID: "c", Headers: map[string]string{"sub": ".*"}},
	}
	res, err := sink.Write(context.Background(), msgs)
	var we *vertex.WriteError
	if !errors.As(err, &we) || len(res) != 3 {
		t.Fatalf("got %v, %v; want results and a *vertex.WriteError", res, err)
	}
	if res[0] != vertex.ResultOK || res[1] != vertex.ResultFallback || res[2] != vertex.ResultFallback {
		t.Fatalf("results %v, want ok, fallback, fallback", res)
	}
	if !errors.Is(we.Causes[1], ErrHeader) || !errors.Is(we.Causes[2], ErrSubject) {
		t.Fatalf("causes %v, want ErrHeader and ErrSubject", we.Causes)
	}
	if got := readStream(t, js, "out"); len(got) != 1 || string(got[0].Data()) != "ok" {
		t.Fatalf("the stream holds %d messages, want the one that could be carried", len(got))
	}
}
