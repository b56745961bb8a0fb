package nats

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// upper is the test pipelines' map: "id-i" becomes "ID-i".
func upper(_ context.Context, v []byte) ([]byte, error) { return bytes.ToUpper(v), nil }

// NATS -> runnel -> NATS: every message published to "in" reaches "out"
// exactly once (no failure and a queue large enough, so neither loss
// nor repetition), with the keys, event time and header it had.
func TestPipelineSubjectToSubject(t *testing.T) {
	const n, keys = 20000, 16
	srv := natstest.Start(t)
	nc := srv.Connect()
	src, err := NewSource(SourceConfig{Conn: nc, Subject: "in"})
	if err != nil {
		t.Fatal(err)
	}
	sink, err := NewSink(SinkConfig{Conn: nc, SubjectOf: func(m *vertex.Message[[]byte]) string { return "out." + m.Keys[0] }})
	if err != nil {
		t.Fatal(err)
	}
	// The reader of "out", on a connection of its own.
	var (
		mu     sync.Mutex
		counts = map[string]int{}
		bad    []string
		got    int
	)
	rc := srv.Connect()
	base := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	if _, err := rc.Subscribe("out.>", func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		v := string(m.Data)
		i, err := strconv.Atoi(v[len("ID-"):])
		switch {
		case err != nil:
			bad = append(bad, "value "+v)
		case m.Subject != "out.k"+strconv.Itoa(i%keys) || m.Header.Get(KeyHeader) != "k"+strconv.Itoa(i%keys):
			bad = append(bad, v+" on "+m.Subject+" with key "+m.Header.Get(KeyHeader))
		case m.Header.Get("n") != strconv.Itoa(i):
			bad = append(bad, v+" header n="+m.Header.Get("n"))
		case m.Header.Get(EventTimeHeader) != base.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano):
			bad = append(bad, v+" event time "+m.Header.Get(EventTimeHeader))
		}
		counts[v]++
		got++
	}); err != nil {
		t.Fatal(err)
	}
	rc.Flush()

	p := pipeline.New("nats")
	in := pipeline.Source(p, "in", src, vertex.Replicas(2), vertex.BatchSize(100))
	up := pipeline.Map(p, "upper", in, upper, vertex.Replicas(2), vertex.BatchSize(100))
	pipeline.Sink(p, "out", up, sink, vertex.Replicas(2), vertex.BatchSize(100))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()

	pc := srv.Connect()
	for i := range n {
		m := &nats.Msg{Subject: "in", Data: []byte("id-" + strconv.Itoa(i)), Header: nats.Header{}}
		m.Header.Set("n", strconv.Itoa(i))
		m.Header.Set(KeyHeader, "k"+strconv.Itoa(i%keys))
		m.Header.Set(EventTimeHeader, base.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano))
		if err := pc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := pc.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "every message through the pipeline", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return got >= n
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rc.Flush() // anything more the pipeline sent has arrived
	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Fatalf("%d messages mapped wrong, first: %s", len(bad), bad[0])
	}
	for i := range n {
		if c := counts["ID-"+strconv.Itoa(i)]; c != 1 {
			t.Fatalf("ID-%d reached the output %d times, want once", i, c)
		}
	}
	if len(counts) != n || got != n {
		t.Fatalf("%d messages, %d distinct, want %d", got, len(counts), n)
	}
	if d := src.Dropped(); d != 0 {
		t.Fatalf("the source dropped %d messages", d)
	}
}

// A source whose queue is full drops what comes next and counts it
// exactly: nothing is read, so of n messages Pending are kept; the drops
// are logged, rate-limited.
func TestSourceDropsWhenFull(t *testing.T) {
	const n, pending = 1000, 100
	srv := natstest.Start(t)
	nc := srv.Connect()
	core, logs := observer.New(zapcore.InfoLevel)
	src, err := NewSource(SourceConfig{Conn: nc, Subject: "in", Pending: pending, Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	pc := srv.Connect()
	for i := range n {
		pc.Publish("in", []byte(strconv.Itoa(i)))
	}
	pc.Flush()
	waitFor(t, 10*time.Second, "every message received or dropped", func() bool {
		d, q := src.Dropped(), len(src.q.C)
		if d+int64(q) > n {
			t.Fatalf("%d dropped and %d queued of %d published", d, q, n)
		}
		return d+int64(q) == n
	})
	if d := src.Dropped(); d != n-pending {
		t.Fatalf("dropped %d, want %d", d, n-pending)
	}
	msgs, err := src.Read(context.Background(), 2*pending)
	if err != nil || len(msgs) != pending {
		t.Fatalf("read %d messages (%v), want the %d kept", len(msgs), err, pending)
	}
	for i, m := range msgs {
		if string(m.Value) != strconv.Itoa(i) {
			t.Fatalf("message %d is %q, want the first ones kept", i, m.Value)
		}
	}
	lines := logs.FilterMessage("nats source: pending queue full, messages dropped").All()
	if len(lines) == 0 || len(lines) >= n-pending {
		t.Fatalf("%d log lines for %d drops, want some, rate-limited", len(lines), n-pending)
	}
}

// A message NATS cannot carry goes to the fallback with ErrHeader as its
// cause; a subject SubjectOf gets wrong, with ErrSubject; the others of
// the batch are published.
func TestSinkRefusesWhatNATSCannotCarry(t *testing.T) {
	srv := natstest.Start(t)
	nc := srv.Connect()
	sub, err := nc.SubscribeSync("out")
	if err != nil {
		t.Fatal(err)
	}
	sink, err := NewSink(SinkConfig{Conn: nc, SubjectOf: func(m *vertex.Message[[]byte]) string { return "out" + m.Headers["sub"] }})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	msgs := []vertex.Message[[]byte]{
		{ID: "a", Value: []byte("ok")},
		{ID: "b", Headers: map[string]string{"bad name": "v"}},
		{ID: "c", Headers: map[string]string{"sub": "..x"}},
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
	m, err := sub.NextMsg(5 * time.Second)
	if err != nil || string(m.Data) != "ok" {
		t.Fatalf("got %v, %v; want the message that could be carried", m, err)
	}
	if n, _, _ := sub.Pending(); n != 0 {
		t.Fatalf("%d more messages published", n)
	}
}

// Two sources in one queue group share a subject's messages: each
// message reaches exactly one of them.
func TestQueueGroupShares(t *testing.T) {
	const n = 2000
	srv := natstest.Start(t)
	var srcs []*Source
	for range 2 {
		src, err := NewSource(SourceConfig{Conn: srv.Connect(), Subject: "in", Queue: "workers"})
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		srcs = append(srcs, src)
	}
	pc := srv.Connect()
	for i := range n {
		pc.Publish("in", []byte(strconv.Itoa(i)))
	}
	pc.Flush()
	counts := map[string]int{}
	got := make([]int, len(srcs))
	waitFor(t, 10*time.Second, "every message read by one of the sources", func() bool {
		for i, src := range srcs {
			msgs, err := src.Read(context.Background(), n)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				counts[string(m.Value)]++
			}
			got[i] += len(msgs)
		}
		return got[0]+got[1] >= n
	})
	for i := range n {
		if c := counts[strconv.Itoa(i)]; c != 1 {
			t.Fatalf("message %d read %d times, want once", i, c)
		}
	}
	if got[0]+got[1] != n || got[0] == 0 || got[1] == 0 {
		t.Fatalf("the sources read %d and %d of %d", got[0], got[1], n)
	}
}
