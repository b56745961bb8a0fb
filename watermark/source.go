package watermark

import (
	"fmt"
	"sync"
	"time"
)

// SourceConfig configures a [Source].
type SourceConfig struct {
	// Partitions is the number of source partitions (at least 1).
	Partitions int
	// MaxDelay is how late an event may arrive and still not be late: the
	// watermark trails the smallest event time read by MaxDelay.
	MaxDelay time.Duration
	// IdleThreshold: a partition with no data for this long is idle and its
	// watermark advances by IncrementBy every StepInterval, never past
	// now - MaxDelay. Zero disables idle advancement.
	IdleThreshold time.Duration
	StepInterval  time.Duration
	IncrementBy   time.Duration
	// Clock is the source's clock (time.Now when nil).
	Clock Clock
}

// Source computes a source's watermark per source partition: the minimum
// event time of each batch read minus MaxDelay, never decreasing, advanced
// while the partition is idle. It is safe for concurrent use. Its Observe
// method matches the forwarder's source watermark hook.
type Source struct {
	cfg   SourceConfig
	clock Clock

	mu    sync.Mutex
	parts []sourcePartition // guarded by mu
}

type sourcePartition struct {
	ended    bool      // End was called: wm is Max for good
	wm       time.Time // zero until the first batch or idle step
	lastData time.Time // clock at the last batch, or at NewSource
	lastStep time.Time // clock at the last idle step; zero: none since data
}

// NewSource validates cfg and returns a Source.
func NewSource(cfg SourceConfig) (*Source, error) {
	switch {
	case cfg.Partitions < 1:
		return nil, fmt.Errorf("%w: SourceConfig.Partitions %d, want at least 1", ErrInvalidConfig, cfg.Partitions)
	case cfg.MaxDelay < 0:
		return nil, fmt.Errorf("%w: SourceConfig.MaxDelay %v < 0", ErrInvalidConfig, cfg.MaxDelay)
	case cfg.IdleThreshold < 0:
		return nil, fmt.Errorf("%w: SourceConfig.IdleThreshold %v < 0", ErrInvalidConfig, cfg.IdleThreshold)
	case cfg.IdleThreshold > 0 && cfg.StepInterval <= 0:
		return nil, fmt.Errorf("%w: SourceConfig.StepInterval %v must be > 0 with an IdleThreshold", ErrInvalidConfig, cfg.StepInterval)
	case cfg.IdleThreshold > 0 && cfg.IncrementBy <= 0:
		return nil, fmt.Errorf("%w: SourceConfig.IncrementBy %v must be > 0 with an IdleThreshold", ErrInvalidConfig, cfg.IncrementBy)
	}
	s := &Source{cfg: cfg, clock: cfg.Clock.orNow(), parts: make([]sourcePartition, cfg.Partitions)}
	now := s.clock()
	for i := range s.parts {
		s.parts[i].lastData = now
	}
	return s, nil
}

// Observe is called with each batch read from partition (before it is
// written) and the batch's smallest event time; it returns the partition's
// watermark: max(previous, minEventTime - MaxDelay). Messages whose event
// time is below it are late (IsLate). A zero minEventTime (a batch without
// event times) marks activity without moving the watermark. A partition out
// of range has no watermark: the zero Time, so nothing is late.
func (s *Source) Observe(partition int, minEventTime time.Time) time.Time {
	if partition < 0 || partition >= len(s.parts) {
		return time.Time{}
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &s.parts[partition]
	p.lastData, p.lastStep = now, time.Time{}
	if !minEventTime.IsZero() {
		if c := minEventTime.Add(-s.cfg.MaxDelay); c.After(p.wm) {
			p.wm = c
		}
	}
	return p.wm
}

// Watermark returns the current watermark of partition (zero out of range).
func (s *Source) Watermark(partition int) time.Time {
	if partition < 0 || partition >= len(s.parts) {
		return time.Time{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.parts[partition].wm
}

// IdleAdvance is called by the source forwarder when a read of partition
// returned nothing. Once the partition has had no data for IdleThreshold,
// and then every StepInterval, it raises the watermark by IncrementBy (a
// partition that never had a watermark starts at now - MaxDelay), never past
// now - MaxDelay, and returns it with ok true: publish it as an idle WMB. In
// between, ok is false.
func (s *Source) IdleAdvance(partition int) (wm time.Time, ok bool) {
	if s.cfg.IdleThreshold == 0 || partition < 0 || partition >= len(s.parts) {
		return s.Watermark(partition), false
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &s.parts[partition]
	if p.ended || now.Sub(p.lastData) < s.cfg.IdleThreshold ||
		(!p.lastStep.IsZero() && now.Sub(p.lastStep) < s.cfg.StepInterval) {
		return p.wm, false
	}
	p.lastStep = now
	ceiling := now.Add(-s.cfg.MaxDelay)
	next := ceiling
	if !p.wm.IsZero() {
		next = p.wm.Add(s.cfg.IncrementBy)
		if next.After(ceiling) {
			next = ceiling
		}
	}
	if !next.After(p.wm) {
		return p.wm, false
	}
	p.wm = next
	return p.wm, true
}

// End records that partition is exhausted: its watermark is [Max] from now
// on (what the source forwarder publishes with its end-of-stream message),
// so the source's watermark, the lowest of its partitions, follows the
// partitions that go on. It returns Max (the zero Time out of range).
func (s *Source) End(partition int) time.Time {
	if partition < 0 || partition >= len(s.parts) {
		return time.Time{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &s.parts[partition]
	p.ended, p.wm = true, Max
	return Max
}

// IsLate reports whether an event time is below a watermark: such a message
// arrived after the pipeline declared its time done.
func IsLate(eventTime, watermark time.Time) bool { return eventTime.Before(watermark) }
