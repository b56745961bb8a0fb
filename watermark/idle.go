package watermark

import (
	"fmt"
	"sync"
	"time"
)

// IdleAction is what an IdleManager asks the writer to do for a partition.
type IdleAction uint8

const (
	// IdleNothing: the partition is active, or a control message is on its
	// way.
	IdleNothing IdleAction = iota
	// IdleWriteControl: the partition has been idle for the threshold; write
	// one control message (forwarder.ControlTag) to it and report its offset
	// with ControlWritten.
	IdleWriteControl
	// IdlePublish: publish an idle WMB at IdleStep.Offset (the control
	// message's) with Publisher.PublishIdle.
	IdlePublish
)

// String names the action for logs.
func (a IdleAction) String() string {
	switch a {
	case IdleNothing:
		return "nothing"
	case IdleWriteControl:
		return "write-control"
	case IdlePublish:
		return "publish-idle"
	}
	return "unknown"
}

// IdleStep is an IdleManager decision.
type IdleStep struct {
	Action IdleAction
	Offset int64 // with IdlePublish: the control message's offset
}

// IdleManager decides, for the partitions of one outgoing edge of one
// processor, when an idle partition gets its control message and then idle
// WMBs. Downstream readers need both: the control message is data they read
// (and skip), so their read position passes the idle WMB's offset. It is safe
// for concurrent use; it does no I/O.
type IdleManager struct {
	threshold time.Duration
	clock     Clock

	mu    sync.Mutex
	parts []idlePartition // guarded by mu
}

type idlePartition struct {
	lastWrite   time.Time // clock at the last data write, or at NewIdleManager
	controlAt   time.Time // clock when IdleWriteControl was last returned
	pending     bool      // IdleWriteControl returned, ControlWritten not yet
	idle        bool      // control message written, no data since
	controlOffs int64
}

// NewIdleManager returns a manager for partitions partitions that become
// idle after threshold without data. clock nil means time.Now.
func NewIdleManager(partitions int, threshold time.Duration, clock Clock) (*IdleManager, error) {
	if partitions < 1 {
		return nil, fmt.Errorf("%w: NewIdleManager: %d partitions, want at least 1", ErrInvalidConfig, partitions)
	}
	if threshold <= 0 {
		return nil, fmt.Errorf("%w: NewIdleManager: threshold %v must be > 0", ErrInvalidConfig, threshold)
	}
	m := &IdleManager{threshold: threshold, clock: clock.orNow(), parts: make([]idlePartition, partitions)}
	now := m.clock()
	for i := range m.parts {
		m.parts[i].lastWrite = now
	}
	return m, nil
}

func (m *IdleManager) part(partition int) (*idlePartition, error) {
	if partition < 0 || partition >= len(m.parts) {
		return nil, fmt.Errorf("%w: idle manager partition %d, want 0..%d", ErrPartition, partition, len(m.parts)-1)
	}
	return &m.parts[partition], nil
}

// Wrote records a data write to partition (not the control message): the
// partition is active, and a control message still on its way is forgotten.
func (m *IdleManager) Wrote(partition int) error {
	now := m.clock()
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.part(partition)
	if err != nil {
		return err
	}
	*p = idlePartition{lastWrite: now}
	return nil
}

// Next returns what to do for partition now: nothing while data flows;
// IdleWriteControl once it has been quiet for the threshold (again after
// another threshold if ControlWritten never comes); then IdlePublish at the
// control message's offset on every call until data is written again.
func (m *IdleManager) Next(partition int) (IdleStep, error) {
	now := m.clock()
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.part(partition)
	if err != nil {
		return IdleStep{}, err
	}
	switch {
	case p.idle:
		return IdleStep{Action: IdlePublish, Offset: p.controlOffs}, nil
	case p.pending && now.Sub(p.controlAt) < m.threshold:
		return IdleStep{}, nil
	case now.Sub(p.lastWrite) >= m.threshold:
		p.pending, p.controlAt = true, now
		return IdleStep{Action: IdleWriteControl}, nil
	}
	return IdleStep{}, nil
}

// ControlWritten records that the control message asked for by Next was
// written at offset. If data was written to the partition since that Next,
// the partition is active and the call changes nothing.
func (m *IdleManager) ControlWritten(partition int, offset int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.part(partition)
	if err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("%w: idle manager partition %d: control offset %d is negative", ErrRange, partition, offset)
	}
	if p.pending {
		p.pending, p.idle, p.controlOffs = false, true, offset
	}
	return nil
}
