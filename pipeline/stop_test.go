package pipeline

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/vertex"
)

// runResult is Run's error, or a failure when Run has not returned within
// a bound far above anything these tests wait for (so a hang fails).
func runResult(t *testing.T, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute")
		return nil
	}
}

// deafSink ignores its context: its first Write blocks until release is
// closed. It counts its Closes.
type deafSink struct {
	started  chan struct{}
	release  chan struct{}
	returned chan struct{}
	once     sync.Once
	closes   atomic.Int32
}

func newDeafSink() *deafSink {
	return &deafSink{started: make(chan struct{}), release: make(chan struct{}), returned: make(chan struct{})}
}

func (s *deafSink) Write(_ context.Context, _ []vertex.Message[int]) ([]vertex.Result, error) {
	first := false
	s.once.Do(func() { first = true; close(s.started) })
	if first {
		<-s.release
		close(s.returned)
	}
	return nil, nil
}

func (s *deafSink) Close() error { s.closes.Add(1); return nil }

// A sink that ignores its context no longer hangs Run: past DrainTimeout
// the pipeline stops at once, waits AbandonAfter for its replicas, and
// returns without the one stuck in the sink, naming it; the sink is not
// closed under its own Write.
func TestDrainTimeoutAbandonsADeafSink(t *testing.T) {
	p := New("deaf", DrainTimeout(20*time.Millisecond))
	src := Source(p, "gen", vertex.Generator(func(i int64) int { return int(i) }))
	sink := newDeafSink()
	Sink(p, "stuck", src, vertex.Sink[int](sink))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- p.Run(ctx) }()
	<-sink.started
	cancel()
	err := runResult(t, errc)
	var ab *AbandonedError
	if !errors.Is(err, ErrDrainTimeout) || !errors.As(err, &ab) || !errors.Is(err, ErrAbandoned) {
		t.Fatalf("Run: %v, want ErrDrainTimeout and an *AbandonedError", err)
	}
	if !slices.Equal(ab.Replicas, []string{"stuck/0"}) || ab.After != AbandonAfter {
		t.Errorf("abandoned %v after %v, want [stuck/0] after %v", ab.Replicas, ab.After, AbandonAfter)
	}
	if n := sink.closes.Load(); n != 0 {
		t.Errorf("the abandoned sink was closed %d times under its Write", n)
	}
	close(sink.release) // let the replica go, for goleak
	<-sink.returned
}

// slowSink honours its context: each Write waits for it to end, so a drain
// never finishes by itself.
func slowSink(started chan<- struct{}) vertex.Sink[int] {
	var once sync.Once
	return vertex.SinkFunc[int](func(ctx context.Context, _ []vertex.Message[int]) ([]vertex.Result, error) {
		once.Do(func() { close(started) })
		<-ctx.Done()
		return nil, ctx.Err()
	})
}

// Stop during a drain (the second interrupt) stops at once: Run returns
// ErrStopped without waiting out a DrainTimeout of an hour.
func TestStopDuringDrain(t *testing.T) {
	p := New("second-interrupt", DrainTimeout(time.Hour))
	src := Source(p, "gen", vertex.Generator(func(i int64) int { return int(i) }))
	started := make(chan struct{})
	Sink(p, "slow", src, slowSink(started))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- p.Run(ctx) }()
	<-started
	cancel() // the first interrupt: drain
	p.Stop() // the second: at once
	p.Stop() // idempotent
	if err := runResult(t, errc); !errors.Is(err, ErrStopped) || errors.Is(err, ErrAbandoned) {
		t.Fatalf("Run: %v, want ErrStopped and nothing abandoned", err)
	}
	p.Stop() // after Run: nothing
}

// Drain with a deadline of its own: when it passes before the drain ends,
// the pipeline stops at once; Drain returns the deadline's error and Run
// ErrStopped.
func TestDrainDeadlineStops(t *testing.T) {
	p := New("drain-deadline", DrainTimeout(time.Hour))
	src := Source(p, "gen", vertex.Generator(func(i int64) int { return int(i) }))
	started := make(chan struct{})
	Sink(p, "slow", src, slowSink(started))
	errc := make(chan error, 1)
	go func() { errc <- p.Run(context.Background()) }()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := p.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Drain: %v, want context.DeadlineExceeded", err)
	}
	if err := runResult(t, errc); !errors.Is(err, ErrStopped) {
		t.Fatalf("Run: %v, want ErrStopped", err)
	}
}

// A Drain that finishes returns nil, and so does Run: everything read was
// delivered.
func TestDrainFinishes(t *testing.T) {
	p := New("drained")
	src := Source(p, "gen", vertex.Generator(func(i int64) int { return int(i) }))
	var delivered atomic.Int64
	first := make(chan struct{})
	var once sync.Once
	Sink(p, "count", src, vertex.SinkFunc[int](func(_ context.Context, msgs []vertex.Message[int]) ([]vertex.Result, error) {
		delivered.Add(int64(len(msgs)))
		once.Do(func() { close(first) })
		return nil, nil
	}))
	errc := make(chan error, 1)
	go func() { errc <- p.Run(context.Background()) }()
	<-first
	if err := p.Drain(context.Background()); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if err := runResult(t, errc); err != nil {
		t.Fatalf("Run after a drain: %v", err)
	}
	st := p.Stats()
	if got := delivered.Load(); st[0].Read != got || got == 0 {
		t.Errorf("the source read %d, the sink got %d: a drain delivers everything read", st[0].Read, got)
	}
}

// Stop before Run: Run stops at once.
func TestStopBeforeRun(t *testing.T) {
	p := New("stopped-early")
	src := Source(p, "gen", vertex.Generator(func(i int64) int { return int(i) }))
	Sink(p, "out", src, vertex.Blackhole[int]())
	p.Stop()
	errc := make(chan error, 1)
	go func() { errc <- p.Run(context.Background()) }()
	if err := runResult(t, errc); !errors.Is(err, ErrStopped) {
		t.Fatalf("Run after Stop: %v, want ErrStopped", err)
	}
}
