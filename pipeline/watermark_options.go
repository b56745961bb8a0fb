package pipeline

import (
	"fmt"
	"github.com/runnel-dev/runnel/isb"
	"time"

	"github.com/runnel-dev/runnel/watermark"
)

// WatermarkConfig configures the event-time watermarks a pipeline tracks
// (see package watermark). Zero fields take the defaults.
type WatermarkConfig struct {
	// MaxDelay is how late an event may arrive at a source and still not
	// be late: a source's watermark trails the smallest event time of each
	// batch it reads by MaxDelay (default 0).
	MaxDelay time.Duration
	// IdleThreshold: a source partition (replica) whose reads have found
	// nothing for this long advances its watermark by IdleIncrement every
	// IdleStep, never past now - MaxDelay. Zero (the default) leaves the
	// watermark of a quiet source where it is. A source advances only
	// after reads that return no message, so a source that can go quiet
	// should return an empty batch now and then. A source that reads
	// several partitions (vertex.PartitionedSource) has a watermark per
	// partition, whichever replica read it, and each replica's is the
	// lowest of them: a partition without data for this long advances the
	// same way while the others flow. One not read at all in this run
	// holds the source back until a read finds nothing in any partition
	// (or, with IdleThreshold, until its first idle step).
	IdleThreshold time.Duration
	IdleStep      time.Duration // default IdleThreshold
	IdleIncrement time.Duration // default IdleStep
	// PartitionIdleThreshold: a buffer partition a replica has not written
	// to for this long gets one control message, then idle WMBs, so that
	// its reader's watermark does not wait for data that is not coming
	// (default 1s).
	PartitionIdleThreshold time.Duration
	// IdleInterval is how often (wall-clock time) replicas check their
	// quiet input and output partitions (default 100ms). What is idle is
	// judged on Clock.
	IdleInterval time.Duration
	// HeartbeatInterval is how often (wall-clock time) every replica
	// heartbeats (default watermark.DefaultHeartbeatInterval);
	// HeartbeatTimeout, judged on Clock, is how long a silent replica is
	// still counted by its readers (default watermark.DefaultHeartbeatTimeout).
	HeartbeatInterval time.Duration
	HeartbeatTimeout  time.Duration
	// Throttle is the minimum time between two WMBs of a replica for one
	// partition (default 10ms); 0 is the default, so use
	// a tiny value such as time.Nanosecond to publish every advance (which
	// costs nothing while nothing advances: a WMB held back is published by
	// a timer armed when it is held).
	Throttle time.Duration
	// Clock is the watermarks' clock (time.Now when nil): tests inject one.
	Clock watermark.Clock
}

// Watermark defaults of a pipeline, stated in WatermarkConfig's fields.
const (
	defaultPartitionIdleThreshold = time.Second
	defaultWatermarkThrottle      = 10 * time.Millisecond
)

// Watermarks configures the pipeline's watermarks (on by default, with
// the zero WatermarkConfig).
func Watermarks(c WatermarkConfig) Option { return func(o *config) { o.wm = c } }

// WatermarkStore makes the pipeline keep its watermarks in s instead of a
// new in-memory store of its own (watermark.MemStore). Pipelines sharing
// a store must not share vertex names.
func WatermarkStore(s watermark.Store) Option { return func(o *config) { o.wmStore = s } }

// WithoutWatermarks turns watermarks off: messages carry no watermark,
// sources mark nothing late, and nothing is published (the benchmark
// baseline).
func WithoutWatermarks() Option { return func(o *config) { o.wmOff = true } }

// resolve validates c once and fills in the defaults; bad fields are an
// ErrInvalidOption naming the field.
func (c WatermarkConfig) resolve() (WatermarkConfig, error) {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"MaxDelay", c.MaxDelay}, {"IdleThreshold", c.IdleThreshold}, {"IdleStep", c.IdleStep},
		{"IdleIncrement", c.IdleIncrement}, {"PartitionIdleThreshold", c.PartitionIdleThreshold},
		{"IdleInterval", c.IdleInterval}, {"HeartbeatInterval", c.HeartbeatInterval},
		{"HeartbeatTimeout", c.HeartbeatTimeout}, {"Throttle", c.Throttle},
	} {
		if f.d < 0 {
			return c, &isb.OptionError{Package: "pipeline", Option: "WatermarkConfig." + f.name, Value: f.d, Reason: "must not be negative"}
		}
	}
	if c.IdleStep == 0 {
		c.IdleStep = c.IdleThreshold
	}
	if c.IdleIncrement == 0 {
		c.IdleIncrement = c.IdleStep
	}
	if c.PartitionIdleThreshold == 0 {
		c.PartitionIdleThreshold = defaultPartitionIdleThreshold
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = watermark.DefaultHeartbeatInterval
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = max(watermark.DefaultHeartbeatTimeout, 3*c.HeartbeatInterval)
	}
	if c.HeartbeatTimeout <= c.HeartbeatInterval {
		return c, &isb.OptionError{Package: "pipeline", Option: "WatermarkConfig.HeartbeatTimeout", Value: c.HeartbeatTimeout,
			Reason: fmt.Sprintf("must exceed HeartbeatInterval (%v), or every replica looks dead between heartbeats", c.HeartbeatInterval)}
	}
	if c.Throttle == 0 {
		c.Throttle = defaultWatermarkThrottle
	}
	return c, nil
}
