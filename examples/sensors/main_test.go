package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// signalWriter collects what run writes and closes first once a line of
// counters shows that the averages sink has read something (run writes
// each line in one Write).
type signalWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	once  sync.Once
	first chan struct{}
}

func (w *signalWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var read int64
	if _, err := fmt.Sscanf(string(b), "averages read %d", &read); err == nil && read > 0 {
		w.once.Do(func() { close(w.first) })
	}
	return w.buf.Write(b)
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

type counters struct{ read, written, acked, inFlight, pending int64 }

// TestRunStopsCleanlyOnCancel cancels the pipeline once its counters show
// readings at the averages sink and checks that run drains before returning: nothing in
// flight or pending, every vertex acked all it read, and every reading the
// sink got appears in exactly one sensor's mean.
func TestRunStopsCleanlyOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &signalWriter{first: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- run(ctx, w, zap.NewNop()) }()
	select {
	case <-w.first:
	case err := <-done:
		t.Fatalf("run returned %v before it was cancelled\n%s", err, w.String())
	case <-time.After(time.Minute):
		cancel()
		<-done
		t.Fatalf("the averages sink read nothing in a minute\n%s", w.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run after cancel = %v; want nil (a cancelled pipeline drains)\n%s", err, w.String())
	}

	out := w.String()
	blocks := strings.Split(out, "\n\n")
	final := blocks[len(blocks)-2] // the last block of counters; the means follow it
	stats := map[string]counters{}
	for line := range strings.SplitSeq(final, "\n") {
		var name string
		var c counters
		if _, err := fmt.Sscanf(line, "%s read %d written %d acked %d in flight %d pending %d",
			&name, &c.read, &c.written, &c.acked, &c.inFlight, &c.pending); err != nil {
			t.Fatalf("counter line %q: %v\n%s", line, err, out)
		}
		stats[name] = c
	}
	if len(stats) != 4 {
		t.Fatalf("final counters name %d vertices; want 4\n%s", len(stats), out)
	}
	for name, c := range stats {
		if c.inFlight != 0 || c.pending != 0 || c.acked != c.read {
			t.Errorf("%s after the stop: %+v; want all read acked, none in flight or pending", name, c)
		}
	}
	if stats["readings"].read == 0 {
		t.Fatalf("no reading was generated before the cancel\n%s", out)
	}
	if r, c := stats["readings"], stats["celsius"]; c.read != r.written {
		t.Errorf("celsius read %d; the source wrote %d", c.read, r.written)
	}
	if c, a := stats["celsius"], stats["averages"]; a.read != c.read {
		t.Errorf("averages read %d; celsius read %d (every reading goes to averages)", a.read, c.read)
	}
	if c, a := stats["celsius"], stats["alerts"]; c.written != c.read+a.read {
		t.Errorf("celsius wrote %d; want %d to averages plus %d alerts", c.written, c.read, a.read)
	}

	var sensors, readings int64
	for line := range strings.SplitSeq(strings.TrimSpace(blocks[len(blocks)-1]), "\n") {
		var key string
		var mean float64
		var n int64
		if _, err := fmt.Sscanf(line, "sensor %s mean %f°C over %d readings", &key, &mean, &n); err != nil {
			t.Fatalf("mean line %q: %v\n%s", line, err, out)
		}
		sensors++
		readings += n
	}
	if want := stats["averages"].read; readings != want {
		t.Errorf("the means cover %d readings; averages read %d", readings, want)
	}
	if sensors == 0 || sensors > 8 {
		t.Errorf("%d sensor means; want 1 to 8", sensors)
	}
}
