package vertex

import (
	"context"
	"encoding/binary"
	"testing"
	"time"
)

// fixedState is a StateStore holding a position, for Resume.
type fixedState struct{ pos int64 }

func (f fixedState) Load() ([]byte, bool, error) {
	return binary.LittleEndian.AppendUint64(nil, uint64(f.pos)), true, nil
}
func (fixedState) Save([]byte) error { return nil }

// A generator resumed at position 10M with Rate(1000) owes nothing for the
// earlier runs: message 10M is due at once and the next ones at 1,000/s
// from this run's first Read (issue 18, defect 4: it waited 10M/1000 s,
// almost 3 hours, since the rate clock counted from message 0). The clock
// is the test's, so the counts are exact.
func TestGeneratorResumedRateDoesNotStall(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	g := Generator(func(i int64) int64 { return i }).WithRate(1000)
	g.clock = func() time.Time { return now }
	if err := g.Resume(fixedState{10_000_000}); err != nil {
		t.Fatal(err)
	}
	first, n, wait := g.reserve(100)
	if first != 10_000_000 || n != 1 || wait != 0 {
		t.Fatalf("at the first read: %d messages from %d, wait %v; want 1 from 10000000 at once", n, first, wait)
	}
	if _, n, wait := g.reserve(100); n != 0 || wait != time.Millisecond {
		t.Fatalf("at once again: %d messages, wait %v; want none, 1ms", n, wait)
	}
	now = now.Add(50 * time.Millisecond)
	if first, n, _ := g.reserve(100); first != 10_000_001 || n != 50 {
		t.Fatalf("50ms later: %d messages from %d, want 50 from 10000001", n, first)
	}
	// Through Read as the pipeline calls it: due messages come at once
	// (the context would end a wait).
	now = now.Add(10 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	msgs, err := g.Read(ctx, 100)
	if err != nil || len(msgs) != 10 || msgs[0].ID != "10000051" {
		t.Fatalf("Read 10ms later: %d messages, %v; want 10 from 10000051", len(msgs), err)
	}
}
