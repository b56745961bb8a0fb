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

func TestSourceConfigErrors(t *testing.T) {
	for name, c := range map[string]SourceConfig{
		"partitions": {},
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
