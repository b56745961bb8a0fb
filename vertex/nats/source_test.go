package nats

import (
	"context"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/runnel-dev/runnel/internal/natstest"
)

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
