package forwarder

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// A FailureLog logs the first failure, then at most one line per Every
// with the count of failures it did not log, and the end of an outage once.
func TestFailureLogRateLimits(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	now := time.Unix(1000, 0)
	l := &FailureLog{Every: 5 * time.Second, Now: func() time.Time { return now }}
	boom := errors.New("connection refused")
	// 13 failures one second apart: lines at 0s, 5s and 10s.
	for range 13 {
		l.failed(log, "write failed", zap.Error(boom))
		now = now.Add(time.Second)
	}
	l.recovered(log, "write succeeded after failures")
	// Recovered at 13s: a new outage logs its first failure at once only
	// once Every passed since the last line (10s): at 15s, not at 14s.
	l.failed(log, "write failed", zap.Error(boom))     // 13s: suppressed
	l.recovered(log, "write succeeded after failures") // no line: none of this outage was logged
	now = now.Add(2 * time.Second)
	l.failed(log, "write failed", zap.Error(boom)) // 15s: logged, suppressed 3 (11s, 12s, 13s)
	l.recovered(log, "write succeeded after failures")

	type line struct {
		msg                  string
		suppressed, failures int64
		after                time.Duration
	}
	var got []line
	for _, e := range logs.All() {
		m := e.ContextMap()
		ln := line{msg: e.Message}
		if v, ok := m["suppressed"].(int64); ok {
			ln.suppressed = v
		}
		if v, ok := m["failures"].(int64); ok {
			ln.failures = v
		}
		if v, ok := m["after"].(time.Duration); ok {
			ln.after = v
		}
		if e.Message == "write failed" && m["error"] != "connection refused" {
			t.Errorf("line %q has error %v; want the cause", e.Message, m["error"])
		}
		got = append(got, ln)
	}
	want := []line{
		{msg: "write failed", suppressed: 0},
		{msg: "write failed", suppressed: 4},
		{msg: "write failed", suppressed: 4},
		{msg: "write succeeded after failures", failures: 13, after: 13 * time.Second},
		{msg: "write failed", suppressed: 3},
		{msg: "write succeeded after failures", failures: 1, after: 0},
	}
	if len(got) != len(want) {
		t.Fatalf("lines %+v; want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %+v; want %+v", i, got[i], want[i])
		}
	}
	if w := logs.FilterMessage("write failed").All(); w[0].Level != zapcore.WarnLevel {
		t.Errorf("failure logged at %v; want warn", w[0].Level)
	}
}

// A nil FailureLog and a nil logger are no-ops.
func TestFailureLogNil(t *testing.T) {
	var l *FailureLog
	l.failed(zap.NewNop(), "x")
	l.recovered(zap.NewNop(), "x")
	(&FailureLog{}).failed(nil, "x")
	(&FailureLog{}).recovered(nil, "x")
}

// Flush says how many failures of an outage that has not ended the rate
// limit held back, and nothing for an outage a success ended.
func TestFailureLogFlush(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	now := time.Unix(1000, 0)
	l := &FailureLog{Every: 5 * time.Second, Now: func() time.Time { return now }}
	boom := errors.New("connection refused")
	// An outage that ended: the recovery line said it all.
	for range 3 {
		l.failed(log, "write failed", zap.Error(boom)) // 0s logged; 1s, 2s held
		now = now.Add(time.Second)
	}
	l.recovered(log, "write succeeded after failures")
	l.Flush(log, zap.String("vertex", "out"))
	if n := logs.FilterMessage("failures not logged before the run ended").Len(); n != 0 {
		t.Fatalf("Flush after a recovered outage logged %d lines; want none", n)
	}
	// An outage still on at the end: 7 failures from 5s, lines at 5s and
	// 10s, then 11s held back.
	now = time.Unix(1005, 0)
	for range 7 {
		l.failed(log, "write failed", zap.Error(boom))
		now = now.Add(time.Second)
	}
	l.Flush(log, zap.String("vertex", "out"))
	got := logs.FilterMessage("failures not logged before the run ended").All()
	if len(got) != 1 {
		t.Fatalf("Flush logged %d lines; want 1", len(got))
	}
	m := got[0].ContextMap()
	if m["suppressed"] != int64(1) || m["failures"] != int64(7) || m["failing for"] != 7*time.Second || m["vertex"] != "out" {
		t.Errorf("flush line %v; want suppressed 1, failures 7, failing for 7s, vertex out", m)
	}
	l.Flush(log)
	if n := logs.FilterMessage("failures not logged before the run ended").Len(); n != 1 {
		t.Errorf("a second Flush logged again: %d lines", n)
	}
}
