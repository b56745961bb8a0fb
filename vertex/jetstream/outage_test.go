package jetstream

import (
	"context"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// A server stopped for 2 seconds in the middle of a run and started again
// on the same port and store: the sink's publishes time out and are
// answered retry with their cause, the pipeline retries (the sink's
// default, vertex.RemoteRetry) and resumes once the server is back;
// every message is in the stream exactly once (a retried publish has the
// Nats-Msg-Id of the first, which the stream may have stored), and the
// log has the failures rate-limited: fewer lines than retries.
func TestSinkSurvivesServerOutage(t *testing.T) {
	const n = 6000
	srv := natstest.Start(t)
	js := newJS(t, srv.Connect())
	createStream(t, js, "out")
	core, logs := observer.New(zapcore.InfoLevel)
	p := pipeline.New("outage", pipeline.WithLogger(zap.New(core)))
	gen := pipeline.Source(p, "gen", vertex.Generator(func(i int64) []byte { return []byte("ID-" + strconv.FormatInt(i, 10)) }).
		WithCount(n).WithRate(1500))
	sink, err := NewSink(SinkConfig{Conn: srv.Connect(), Subject: "out", AckTimeout: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	pipeline.Sink(p, "out", gen, sink, vertex.BatchSize(100))

	// The outage: 2 seconds, once the stream holds 1000 messages.
	outage := make(chan error, 1)
	go func() {
		for {
			st, err := js.Stream(context.Background(), "out")
			if err == nil && st.CachedInfo().State.Msgs >= 1000 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		srv.Stop()
		time.Sleep(2 * time.Second)
		outage <- srv.Resume()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-outage; err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, m := range readStream(t, js, "out") {
		counts[string(m.Data())]++
	}
	for i := range n {
		if got := counts["ID-"+strconv.Itoa(i)]; got != 1 {
			t.Fatalf("ID-%d is in the stream %d times, want once", i, got)
		}
	}
	if len(counts) != n {
		t.Fatalf("%d distinct values in the stream, want %d", len(counts), n)
	}
	var retried int64
	for _, st := range p.Stats() {
		if st.Name == "out" {
			retried = st.Retried
		}
	}
	lines := logs.FilterMessage("sink write failed, retrying").All()
	if sink.Failed() == 0 || retried == 0 {
		t.Fatalf("%d publishes failed, %d retries: the outage did not reach the sink", sink.Failed(), retried)
	}
	if len(lines) == 0 || int64(len(lines)) >= retried {
		t.Fatalf("%d failure lines for %d retries, want some, rate-limited", len(lines), retried)
	}
	if cause := lines[0].ContextMap()["error"]; cause == nil {
		t.Errorf("the failure line names no cause: %v", lines[0].ContextMap())
	}
	t.Logf("%d messages through a 2 s outage: %d publishes failed, %d retries, %d log lines, %d duplicates dropped by the stream",
		n, sink.Failed(), retried, len(lines), sink.Duplicates())
}

// The same outage under a whole pipeline, stream -> source -> slowed map
// -> sink -> stream: the source's consumption and the sink's publishes
// both lose the server for 2 seconds. Acknowledgements sent meanwhile are
// lost, so the server delivers those messages again after AckWait; the
// sink's Nats-Msg-Id keeps the output to one copy each. Every message is
// in "out" exactly once, and the consumer has acknowledged all of "in".
func TestPipelineSurvivesServerOutage(t *testing.T) {
	const n, keys = 6000, 8
	srv := natstest.Start(t)
	js := newJS(t, srv.Connect())
	createStream(t, js, "in")
	createStream(t, js, "out")
	publishIDs(t, js, "in", 0, n, keys)
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(core)
	nc := srv.Connect()
	src, err := NewSource(context.Background(), SourceConfig{
		Conn: nc, Stream: "in", Durable: "outage", StopAtEnd: true, AckWait: time.Second, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	sink, err := NewSink(SinkConfig{Conn: nc, Subject: "out", AckTimeout: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p := pipeline.New("outage", pipeline.WithLogger(log))
	in := pipeline.Source(p, "in", src, vertex.BatchSize(100))
	// About 2000 messages a second, so the run outlasts the outage.
	slow := pipeline.Map(p, "slow", in, func(ctx context.Context, v []byte) ([]byte, error) {
		time.Sleep(2 * time.Millisecond)
		return upper(ctx, v)
	}, vertex.BatchSize(100))
	pipeline.Sink(p, "out", slow, sink, vertex.BatchSize(100))

	outage := make(chan error, 1)
	go func() {
		for {
			st, err := js.Stream(context.Background(), "out")
			if err == nil && st.CachedInfo().State.Msgs >= 1000 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		srv.Stop()
		time.Sleep(2 * time.Second)
		outage <- srv.Resume()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-outage; err != nil {
		t.Fatal(err)
	}
	counts := countIDs(t, readStream(t, js, "out"), keys)
	for i := range n {
		if got := counts["ID-"+strconv.Itoa(i)]; got != 1 {
			t.Fatalf("ID-%d is in the stream %d times, want once", i, got)
		}
	}
	if len(counts) != n {
		t.Fatalf("%d distinct values in the stream, want %d", len(counts), n)
	}
	cons, err := js.Consumer(ctx, "in", "outage")
	if err != nil {
		t.Fatal(err)
	}
	if ci := cons.CachedInfo(); ci.AckFloor.Stream != n || ci.NumAckPending != 0 {
		t.Fatalf("consumer at ack floor %d with %d awaiting acknowledgement, want %d and 0", ci.AckFloor.Stream, ci.NumAckPending, n)
	}
	t.Logf("%d messages through a 2 s outage: %d delivered again, %d publishes failed, %d duplicates dropped by the stream, %d consume-error lines, %d sink-retry lines",
		n, src.Redelivered(), sink.Failed(), sink.Duplicates(),
		len(logs.FilterMessage("jetstream source: consume error; the client recovers").All()),
		len(logs.FilterMessage("sink write failed, retrying").All()))
}
