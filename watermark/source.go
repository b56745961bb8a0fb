package watermark

import (
	"fmt"
	"sync"
	"time"
)

// SourceConfig configures a [Source].
type SourceConfig struct {
	// Partitions is the number of source partitions (at least 1): one per
	// source replica.
	Partitions int
	// Inputs is how many partitions of its own the source reads, shared by
	// its replicas (a topic source: one consumer group, whose batches any
	// replica may read), each with its own watermark, whichever replica
	// read it; every source partition's watermark is then the lowest of
	// them. 0 or 1: each source partition has one watermark of its own.
	Inputs int
	// MaxDelay is how late an event may arrive and still not be late: the
	// watermark trails the smallest event time read by MaxDelay.
	MaxDelay time.Duration
	// IdleThreshold: a partition (or input) with no data for this long is
	// idle and its watermark advances by IncrementBy every StepInterval,
	// never past now - MaxDelay. Zero disables idle advancement.
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
//
// A source that reads several inputs of its own (SourceConfig.Inputs: the
// partitions of a topic) keeps a watermark per input, computed the same
// way from the batches of that input whichever partition (replica) read
// them (ObserveInput), and each partition's watermark is the lowest of the
// inputs', never decreasing. An input with no watermark yet (nothing read
// from it since NewSource) holds the partitions back: its first batch may
// be far behind the other inputs' (after a restart each input resumes from
// its own commit), and judging it on their watermark would make it late.
// It stops holding back once it has a watermark, or once a read found
// nothing at all (IdleAdvance: every input was read to its end, so nothing
// of it is behind).
type Source struct {
	cfg   SourceConfig
	clock Clock
	// shared: inputs are the source's, read by every partition; otherwise
	// inputs[p] is partition p's own.
	shared bool

	mu     sync.Mutex
	parts  []sourcePartition // guarded by mu
	inputs []sourceInput     // guarded by mu
}

type sourcePartition struct {
	ended bool      // End was called: wm is Max for good
	wm    time.Time // the lowest of its inputs', never decreasing; zero until every input has one
}

type sourceInput struct {
	wm       time.Time // zero until the first batch or idle step
	lastData time.Time // clock at the last batch, or at NewSource
	lastStep time.Time // clock at the last idle step; zero: none since data
	// drained: a read found nothing while this input had no watermark: it
	// no longer holds the partitions back.
	drained bool
}

// NewSource validates cfg and returns a Source.
func NewSource(cfg SourceConfig) (*Source, error) {
	switch {
	case cfg.Partitions < 1:
		return nil, fmt.Errorf("%w: SourceConfig.Partitions %d, want at least 1", ErrInvalidConfig, cfg.Partitions)
	case cfg.Inputs < 0:
		return nil, fmt.Errorf("%w: SourceConfig.Inputs %d, want 0 (none shared) or more", ErrInvalidConfig, cfg.Inputs)
	case cfg.MaxDelay < 0:
		return nil, fmt.Errorf("%w: SourceConfig.MaxDelay %v < 0", ErrInvalidConfig, cfg.MaxDelay)
	case cfg.IdleThreshold < 0:
		return nil, fmt.Errorf("%w: SourceConfig.IdleThreshold %v < 0", ErrInvalidConfig, cfg.IdleThreshold)
	case cfg.IdleThreshold > 0 && cfg.StepInterval <= 0:
		return nil, fmt.Errorf("%w: SourceConfig.StepInterval %v must be > 0 with an IdleThreshold", ErrInvalidConfig, cfg.StepInterval)
	case cfg.IdleThreshold > 0 && cfg.IncrementBy <= 0:
		return nil, fmt.Errorf("%w: SourceConfig.IncrementBy %v must be > 0 with an IdleThreshold", ErrInvalidConfig, cfg.IncrementBy)
	}
	s := &Source{cfg: cfg, clock: cfg.Clock.orNow(), shared: cfg.Inputs > 1, parts: make([]sourcePartition, cfg.Partitions)}
	n := cfg.Partitions
	if s.shared {
		n = cfg.Inputs
	}
	s.inputs = make([]sourceInput, n)
	now := s.clock()
	for i := range s.inputs {
		s.inputs[i].lastData = now
	}
	return s, nil
}

// inputsOf returns the inputs partition reads, nil out of range; s.mu is
// held.
func (s *Source) inputsOf(partition int) []sourceInput {
	switch {
	case partition < 0 || partition >= len(s.parts):
		return nil
	case s.shared:
		return s.inputs
	}
	return s.inputs[partition : partition+1]
}

// input returns input of partition, nil out of range; s.mu is held.
func (s *Source) input(partition, input int) *sourceInput {
	in := s.inputsOf(partition)
	if input < 0 || input >= len(in) {
		return nil
	}
	return &in[input]
}

// Observe is called with each batch read from partition (before it is
// written) and the batch's smallest event time; it returns the partition's
// watermark: max(previous, minEventTime - MaxDelay). Messages whose event
// time is below it are late (IsLate). A zero minEventTime (a batch without
// event times) marks activity without moving the watermark. A partition out
// of range has no watermark: the zero Time, so nothing is late. Observe is
// ObserveInput of input 0.
func (s *Source) Observe(partition int, minEventTime time.Time) time.Time {
	return s.ObserveInput(partition, 0, minEventTime)
}

// ObserveInput is Observe for a batch partition read from input: the
// input's watermark becomes max(previous, minEventTime - MaxDelay) and it
// returns the partition's, the lowest of the inputs' (zero while an input
// holds it back; see Source). An input out of range has no watermark: the
// zero Time.
func (s *Source) ObserveInput(partition, input int, minEventTime time.Time) time.Time {
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.input(partition, input)
	if in == nil {
		return time.Time{}
	}
	in.lastData, in.lastStep, in.drained = now, time.Time{}, false
	if !minEventTime.IsZero() {
		if c := minEventTime.Add(-s.cfg.MaxDelay); c.After(in.wm) {
			in.wm = c
		}
	}
	s.lower(partition)
	return s.parts[partition].wm
}

// lower raises the watermark of partition (in range) to the lowest of its
// inputs'; s.mu is held. It reports whether it moved.
func (s *Source) lower(partition int) bool {
	p := &s.parts[partition]
	if p.ended {
		return false
	}
	var low time.Time
	for _, in := range s.inputsOf(partition) {
		switch {
		case in.wm.IsZero() && in.drained:
			continue // nothing of it was behind when a read found nothing
		case in.wm.IsZero():
			return false // not read yet: it may be behind the others
		case low.IsZero() || in.wm.Before(low):
			low = in.wm
		}
	}
	if !low.After(p.wm) {
		return false
	}
	p.wm = low
	return true
}

// Watermark returns the current watermark of partition (zero out of range).
func (s *Source) Watermark(partition int) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inputsOf(partition) == nil {
		return time.Time{}
	}
	s.lower(partition) // shared inputs may have moved through another partition
	return s.parts[partition].wm
}

// IdleAdvance is called by the source forwarder when a read of partition
// returned nothing: none of its inputs had anything to read. An input with
// no watermark then stops holding the partitions back (see Source). Once
// an input has had no data for IdleThreshold, and then every StepInterval,
// its watermark rises by IncrementBy (an input that never had a watermark
// starts at now - MaxDelay), never past now - MaxDelay. It returns the
// partition's watermark with ok true when it moved: publish it as an idle
// WMB. Otherwise ok is false.
func (s *Source) IdleAdvance(partition int) (wm time.Time, ok bool) {
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	inputs := s.inputsOf(partition)
	switch {
	case inputs == nil:
		return time.Time{}, false
	case s.parts[partition].ended:
		return s.parts[partition].wm, false
	}
	for i := range inputs {
		in := &inputs[i]
		in.drained = in.drained || in.wm.IsZero()
		s.idleStep(in, now)
	}
	return s.parts[partition].wm, s.lower(partition)
}

// IdleAdvanceInput is IdleAdvance for one input alone: the source
// forwarder calls it for the inputs a batch did not come from, so that an
// input with no data advances by the idle steps while the others flow. It
// never marks the input drained (a read that returned data says nothing
// of what the other inputs hold).
func (s *Source) IdleAdvanceInput(partition, input int) (wm time.Time, ok bool) {
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.input(partition, input)
	if in == nil {
		return time.Time{}, false
	}
	if !s.parts[partition].ended {
		s.idleStep(in, now)
	}
	moved := s.lower(partition)
	return s.parts[partition].wm, moved
}

// idleStep raises the watermark of the idle input in by one step when one
// is due; s.mu is held.
func (s *Source) idleStep(in *sourceInput, now time.Time) {
	if s.cfg.IdleThreshold == 0 || now.Sub(in.lastData) < s.cfg.IdleThreshold ||
		(!in.lastStep.IsZero() && now.Sub(in.lastStep) < s.cfg.StepInterval) {
		return
	}
	in.lastStep = now
	ceiling := now.Add(-s.cfg.MaxDelay)
	next := ceiling
	if !in.wm.IsZero() {
		if next = in.wm.Add(s.cfg.IncrementBy); next.After(ceiling) {
			next = ceiling
		}
	}
	if next.After(in.wm) {
		in.wm = next
	}
}

// End records that partition is exhausted: its watermark is [Max] from now
// on (what the source forwarder publishes with its end-of-stream message),
// so the source's watermark, the lowest of its partitions, follows the
// partitions that go on. It returns Max (the zero Time out of range).
func (s *Source) End(partition int) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inputsOf(partition) == nil {
		return time.Time{}
	}
	p := &s.parts[partition]
	p.ended, p.wm = true, Max
	return Max
}

// IsLate reports whether an event time is below a watermark: such a message
// arrived after the pipeline declared its time done.
func IsLate(eventTime, watermark time.Time) bool { return eventTime.Before(watermark) }
