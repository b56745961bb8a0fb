package watermark

import (
	"errors"
	"testing"
	"time"
)

func TestSourceObserveAndLate(t *testing.T) {
	clock := newFakeClock()
	s, err := NewSource(SourceConfig{Partitions: 2, MaxDelay: 10 * time.Millisecond, Clock: clock.Now})
	must(t, err)
	wantWM(t, "first batch", s.Observe(0, ms(1000)), ms(990))
	wantWM(t, "earlier batch", s.Observe(0, ms(900)), ms(990)) // never decreases
	if !IsLate(ms(980), s.Watermark(0)) || IsLate(ms(990), s.Watermark(0)) {
		t.Fatal("IsLate: 980 must be late and 990 not, at watermark 990")
	}
	wantWM(t, "later batch", s.Observe(0, ms(2000)), ms(1990))
	wantWM(t, "partition 1 is separate", s.Observe(1, ms(500)), ms(490))
	wantWM(t, "batch without event times", s.Observe(1, time.Time{}), ms(490))
	wantWM(t, "partition out of range", s.Observe(2, ms(5000)), time.Time{})
}

func TestSourceIdleAdvance(t *testing.T) {
	clock := newFakeClock()
	start := clock.Now()
	s, err := NewSource(SourceConfig{
		Partitions: 1, MaxDelay: time.Second,
		IdleThreshold: 5 * time.Second, StepInterval: time.Second, IncrementBy: 2 * time.Second,
		Clock: clock.Now,
	})
	must(t, err)
	wm0 := start.Add(-time.Minute)
	s.Observe(0, wm0.Add(time.Second)) // watermark wm0
	step := func(what string, wantOK bool, want time.Time) {
		t.Helper()
		got, ok := s.IdleAdvance(0)
		if ok != wantOK || !got.Equal(want) {
			t.Fatalf("%s: IdleAdvance = %v,%v; want %v,%v", what, got, ok, want, wantOK)
		}
	}
	clock.Advance(4 * time.Second)
	step("before the threshold", false, wm0)
	clock.Advance(time.Second)
	step("at the threshold", true, wm0.Add(2*time.Second))
	clock.Advance(500 * time.Millisecond)
	step("within the step interval", false, wm0.Add(2*time.Second))
	clock.Advance(500 * time.Millisecond)
	step("next step", true, wm0.Add(4*time.Second))
	// Many steps later the watermark stops at now - MaxDelay.
	for range 100 {
		clock.Advance(time.Second)
		s.IdleAdvance(0)
	}
	ceiling := clock.Now().Add(-time.Second)
	wantWM(t, "capped", s.Watermark(0), ceiling)
	step("at the cap", false, ceiling)
	// Data makes the partition active again: no idle step until the
	// threshold has passed once more.
	s.Observe(0, ceiling.Add(-time.Hour))
	clock.Advance(time.Second)
	step("active again", false, ceiling)
}

func TestSourceIdleWithoutData(t *testing.T) {
	clock := newFakeClock()
	s, err := NewSource(SourceConfig{Partitions: 1, MaxDelay: time.Second,
		IdleThreshold: time.Second, StepInterval: time.Second, IncrementBy: time.Second, Clock: clock.Now})
	must(t, err)
	clock.Advance(time.Second)
	got, ok := s.IdleAdvance(0)
	if !ok || !got.Equal(clock.Now().Add(-time.Second)) {
		t.Fatalf("first idle step of a source that never read = %v,%v; want now - MaxDelay", got, ok)
	}
}

// The inputs are the source's, shared by its partitions (replicas): when
// each replica happens to read one input only (two replicas pulling from
// one consumer in turn), both still get a watermark, the lowest input's.
// A partition that ended stays at Max.
func TestSourceInputsSharedByPartitions(t *testing.T) {
	s, err := NewSource(SourceConfig{Partitions: 2, Inputs: 2, MaxDelay: 10 * time.Millisecond, Clock: newFakeClock().Now})
	must(t, err)
	wantWM(t, "replica 0 reads input 0", s.ObserveInput(0, 0, ms(1000)), time.Time{})
	wantWM(t, "replica 1 reads input 1", s.ObserveInput(1, 1, ms(800)), ms(790))
	wantWM(t, "replica 0, through input 1", s.Watermark(0), ms(790))
	wantWM(t, "replica 0 reads input 0 again", s.ObserveInput(0, 0, ms(1100)), ms(790))
	wantWM(t, "replica 1 reads input 1 again", s.ObserveInput(1, 1, ms(1300)), ms(1090))
	wantWM(t, "replica 0 follows", s.Watermark(0), ms(1090))
	wantWM(t, "End of replica 1", s.End(1), Max)
	wantWM(t, "replica 0 goes on", s.ObserveInput(0, 0, ms(1500)), ms(1290))
	wantWM(t, "replica 1 ended", s.ObserveInput(1, 1, ms(2000)), Max)
	if wm, ok := s.IdleAdvance(1); ok || !wm.Equal(Max) {
		t.Fatalf("IdleAdvance of an ended partition = %v,%v; want Max,false", wm, ok)
	}
	wantWM(t, "partition out of range", s.ObserveInput(2, 0, ms(5000)), time.Time{})
	wantWM(t, "Watermark out of range", s.Watermark(-1), time.Time{})
}

// A source partition that reads two inputs, restarted with input 0 ahead
// of input 1 (each resumed from its own commit): input 0's first batch
// does not move the partition's watermark while input 1 has none, so
// input 1's first batch, far behind, is not late; from then on the
// partition follows the lower input.
func TestSourceInputsRestartBehind(t *testing.T) {
	s, err := NewSource(SourceConfig{Partitions: 1, Inputs: 2, MaxDelay: 10 * time.Millisecond, Clock: newFakeClock().Now})
	must(t, err)
	wantWM(t, "input 0 ahead, input 1 not read yet", s.ObserveInput(0, 0, ms(1000)), time.Time{})
	wm := s.ObserveInput(0, 1, ms(500))
	wantWM(t, "input 1 behind", wm, ms(490))
	if IsLate(ms(500), wm) || IsLate(ms(490), wm) {
		t.Fatalf("input 1's first batch is late at %v", wm)
	}
	wantWM(t, "input 0 goes on", s.ObserveInput(0, 0, ms(1200)), ms(490))
	wantWM(t, "input 1 catches up", s.ObserveInput(0, 1, ms(700)), ms(690))
	wantWM(t, "input 1 passes input 0", s.ObserveInput(0, 1, ms(1500)), ms(1190))
	wantWM(t, "an earlier batch of input 0", s.ObserveInput(0, 0, ms(1100)), ms(1190))
	wantWM(t, "Watermark", s.Watermark(0), ms(1190))
	wantWM(t, "input out of range", s.ObserveInput(0, 2, ms(5000)), time.Time{})
	wantWM(t, "negative input", s.ObserveInput(0, -1, ms(5000)), time.Time{})
	wantWM(t, "unchanged by bad inputs", s.Watermark(0), ms(1190))
	wantWM(t, "End", s.End(0), Max)
	wantWM(t, "after End", s.ObserveInput(0, 1, ms(9000)), Max)
}

// An input with no data in this run holds its partition back until a read
// of the partition finds nothing at all (IdleAdvance: every input was read
// to its end, so nothing of it is behind); IdleAdvanceInput, called while
// another input flows, never releases it. Data that comes to it later
// never lowers the partition's watermark.
func TestSourceInputDrained(t *testing.T) {
	s, err := NewSource(SourceConfig{Partitions: 2, Inputs: 2, MaxDelay: 10 * time.Millisecond, Clock: newFakeClock().Now})
	must(t, err)
	wantWM(t, "input 0 read", s.ObserveInput(1, 0, ms(1000)), time.Time{})
	if wm, ok := s.IdleAdvanceInput(1, 1); ok || !wm.IsZero() {
		t.Fatalf("IdleAdvanceInput of an input never read = %v,%v; want zero,false", wm, ok)
	}
	wm, ok := s.IdleAdvance(1)
	if !ok || !wm.Equal(ms(990)) {
		t.Fatalf("IdleAdvance of a drained partition = %v,%v; want 990ms,true", wm, ok)
	}
	wantWM(t, "partition 0 reads the same inputs", s.Watermark(0), ms(990))
	wantWM(t, "input 1's late data", s.ObserveInput(1, 1, ms(400)), ms(990))
	wantWM(t, "input 0 goes on", s.ObserveInput(1, 0, ms(2000)), ms(990))
	wantWM(t, "input 1 catches up", s.ObserveInput(1, 1, ms(1500)), ms(1490))
	if wm, ok := s.IdleAdvance(1); ok || !wm.Equal(ms(1490)) {
		t.Fatalf("IdleAdvance without an idle threshold = %v,%v; want 1490ms,false", wm, ok)
	}
}

// With an idle threshold, an input without data advances by idle steps
// while the other flows (IdleAdvanceInput), never past now - MaxDelay, and
// the partition follows it.
func TestSourceInputIdleAdvance(t *testing.T) {
	clock := newFakeClock()
	start := clock.Now()
	s, err := NewSource(SourceConfig{Partitions: 1, Inputs: 2, MaxDelay: time.Second,
		IdleThreshold: 5 * time.Second, StepInterval: time.Second, IncrementBy: 2 * time.Second, Clock: clock.Now})
	must(t, err)
	flowing := start.Add(-time.Minute)
	wantWM(t, "input 1 never read", s.ObserveInput(0, 0, flowing), time.Time{})
	clock.Advance(4 * time.Second)
	if _, ok := s.IdleAdvanceInput(0, 1); ok {
		t.Fatal("IdleAdvanceInput moved before the threshold")
	}
	clock.Advance(time.Second)
	s.ObserveInput(0, 0, clock.Now().Add(time.Hour)) // input 0 flows, far ahead
	wm, ok := s.IdleAdvanceInput(0, 1)
	if want := clock.Now().Add(-time.Second); !ok || !wm.Equal(want) {
		t.Fatalf("first idle step of input 1 = %v,%v; want now - MaxDelay %v,true", wm, ok, want)
	}
	clock.Advance(time.Second)
	if _, ok := s.IdleAdvanceInput(0, 1); !ok {
		t.Fatal("second idle step did not move")
	}
	wantWM(t, "capped at now - MaxDelay", s.Watermark(0), clock.Now().Add(-time.Second))
}

func TestSourceConfigErrors(t *testing.T) {
	for name, c := range map[string]SourceConfig{
		"partitions": {},
		"inputs":     {Partitions: 1, Inputs: -1},
		"delay":      {Partitions: 1, MaxDelay: -1},
		"threshold":  {Partitions: 1, IdleThreshold: -1},
		"step":       {Partitions: 1, IdleThreshold: 1, IncrementBy: 1},
		"increment":  {Partitions: 1, IdleThreshold: 1, StepInterval: 1},
	} {
		if _, err := NewSource(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig", name, err)
		}
	}
}
