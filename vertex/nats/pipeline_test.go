package nats

import (
	"bytes"
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

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
