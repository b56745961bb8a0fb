package pipeline

import (
	"testing"
	"time"
)

// TestRateRing drives the samples' clock: rates over windows younger than
// the run use the run's first sample, older ones the sample a window ago,
// and a count that stops moving decays to zero after each window.
func TestRateRing(t *testing.T) {
	var r rateRing
	t0 := time.Unix(1000, 0)
	if got := r.rates(0, t0, 5); got != (Rates{}) {
		t.Fatalf("rates without samples = %+v, want zero", got)
	}
	// 100 messages a second for 10 minutes, sampled every second.
	for s := 0; s <= 600; s++ {
		r.add(t0.Add(time.Duration(s)*time.Second), []int64{int64(100 * s), 7})
	}
	now := t0.Add(600 * time.Second)
	got := r.rates(0, now, 60000)
	if got.M1 != 100 || got.M5 != 100 || got.M15 != 100 {
		t.Fatalf("steady 100/s: %+v, want 100 for each window (15m: since the start)", got)
	}
	if got := r.rates(1, now, 7); got != (Rates{}) {
		t.Fatalf("a count that never moved: %+v, want zero", got)
	}
	// Half a second after the last sample, 50 more: the 1-minute window
	// spans 60.5 s from the sample a minute before now.
	half := now.Add(500 * time.Millisecond)
	if got := r.rates(0, half, 60050); got.M1 != 6050/60.5 {
		t.Fatalf("1m rate half a second on = %v, want %v", got.M1, 6050/60.5)
	}
	// The count stops: two minutes on, the 1-minute rate is zero, the
	// 5-minute one covers 3 of its 5 minutes moving.
	for s := 601; s <= 720; s++ {
		r.add(t0.Add(time.Duration(s)*time.Second), []int64{60000, 7})
	}
	later := t0.Add(720 * time.Second)
	got = r.rates(0, later, 60000)
	if got.M1 != 0 || got.M5 != 60 {
		t.Fatalf("stopped for 2 minutes: %+v, want 1m 0 and 5m 60", got)
	}
	// The ring keeps 15 minutes: after 20 minutes of samples the oldest
	// is 15 minutes and a second old.
	for s := 721; s <= 1200; s++ {
		r.add(t0.Add(time.Duration(s)*time.Second), []int64{60000, 7})
	}
	if len(r.samples) != ringSize || r.at(0).at != t0.Add(time.Duration(1200-ringSize+1)*time.Second) {
		t.Fatalf("ring holds %d samples from %v", len(r.samples), r.at(0).at.Sub(t0))
	}
}
