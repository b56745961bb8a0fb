package forwarder

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// linesOf returns, per line logged, its reason and message count.
func linesOf(obs *observer.ObservedLogs) [][2]any {
	var out [][2]any
	for _, e := range obs.All() {
		f := e.ContextMap()
		out = append(out, [2]any{f["reason"], f["messages"]})
	}
	return out
}

// Per reason, the first drop is logged at once, later ones at most once
// per Every with the count since the line before, and Flush says what the
// limit held back; reasons do not share a limit, and a drop the function
// asked for is at debug level.
func TestDropLogRateLimitsPerReason(t *testing.T) {
	core, obs := observer.New(zap.InfoLevel)
	log := zap.New(core)
	now := time.Unix(1000, 0)
	l := &DropLog{Every: 5 * time.Second, Now: func() time.Time { return now }}

	l.record(log, DropLate, 5)     // logged: 5
	l.record(log, DropLate, 3)     // held
	l.record(log, DropUnrouted, 2) // another reason: logged
	l.record(log, DropTagged, 7)   // debug: not logged at info
	now = now.Add(4 * time.Second)
	l.record(log, DropLate, 4)     // held
	now = now.Add(time.Second)     // 5 s after the first line
	l.record(log, DropLate, 1)     // logged: 3+4+1
	l.record(log, DropLate, 6)     // held
	l.record(log, DropUnrouted, 1) // held (2 s... 5 s after its line: due)
	l.Flush(log)

	want := [][2]any{{DropLate, int64(5)}, {DropUnrouted, int64(2)}, {DropLate, int64(8)}, {DropUnrouted, int64(1)}, {DropLate, int64(6)}}
	got := linesOf(obs)
	if len(got) != len(want) {
		t.Fatalf("lines %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("lines %v, want %v", got, want)
		}
	}
	if n := obs.FilterMessage("messages dropped").Len(); n != 5 {
		t.Errorf("%d lines say \"messages dropped\", want 5", n)
	}
	l.Flush(log) // nothing left
	if n := obs.Len(); n != 5 {
		t.Errorf("a second Flush logged %d more lines", n-5)
	}
}
