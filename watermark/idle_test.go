package watermark

import (
	"errors"
	"testing"
	"time"
)

func TestIdleManagerSequence(t *testing.T) {
	clock := newFakeClock()
	m, err := NewIdleManager(2, 5*time.Second, clock.Now)
	must(t, err)
	next := func(what string, p int, want IdleStep) {
		t.Helper()
		got, err := m.Next(p)
		if err != nil || got != want {
			t.Fatalf("%s: Next(%d) = %+v, %v; want %+v", what, p, got, err, want)
		}
	}
	must(t, m.Wrote(0))
	clock.Advance(4 * time.Second)
	next("active", 0, IdleStep{})
	must(t, m.Wrote(1))
	clock.Advance(time.Second)
	next("quiet for the threshold", 0, IdleStep{Action: IdleWriteControl})
	next("control on its way", 0, IdleStep{})
	next("partition 1 written recently", 1, IdleStep{})
	must(t, m.ControlWritten(0, 17))
	next("idle", 0, IdleStep{Action: IdlePublish, Offset: 17})
	next("still idle", 0, IdleStep{Action: IdlePublish, Offset: 17})
	must(t, m.Wrote(0))
	next("active again", 0, IdleStep{})

	// A control write that never completes is asked for again after
	// another threshold; a data write in between cancels it.
	clock.Advance(5 * time.Second)
	next("quiet again", 0, IdleStep{Action: IdleWriteControl})
	clock.Advance(5 * time.Second)
	next("control lost", 0, IdleStep{Action: IdleWriteControl})
	must(t, m.Wrote(0))
	must(t, m.ControlWritten(0, 30)) // data came first: ignored
	next("after data", 0, IdleStep{})
}

func TestIdleManagerErrors(t *testing.T) {
	if _, err := NewIdleManager(0, time.Second, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("0 partitions: %v", err)
	}
	if _, err := NewIdleManager(1, 0, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("0 threshold: %v", err)
	}
	m, _ := NewIdleManager(1, time.Second, nil)
	if _, err := m.Next(1); !errors.Is(err, ErrPartition) {
		t.Errorf("Next(1): %v", err)
	}
	if err := m.Wrote(-1); !errors.Is(err, ErrPartition) {
		t.Errorf("Wrote(-1): %v", err)
	}
	if err := m.ControlWritten(0, -1); !errors.Is(err, ErrRange) {
		t.Errorf("ControlWritten offset -1: %v", err)
	}
}
