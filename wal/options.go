package wal

import (
	"fmt"
	"github.com/runnel-dev/runnel/isb"
	"time"
)

// Option configures Open.
type Option func(*config) error

// config is the validated form of the options, built once by Open.
type config struct {
	segmentSize  int
	compactEvery time.Duration
	compactMin   int64
	maxBatch     int
}

const (
	defaultSegmentSize  = 16 << 20
	minSegmentSize      = 4 << 10
	defaultCompactEvery = time.Minute
	defaultMaxBatch     = 8 << 20
)

func newConfig(opts []Option) (config, error) {
	c := config{segmentSize: defaultSegmentSize, compactEvery: defaultCompactEvery, compactMin: -1, maxBatch: defaultMaxBatch}
	for i, o := range opts {
		if o == nil {
			return config{}, isb.NilOption("wal.Option", i, len(opts))
		}
		if err := o(&c); err != nil {
			return config{}, err
		}
	}
	if c.compactMin < 0 {
		c.compactMin = 2 * int64(c.segmentSize)
	}
	return c, nil
}

// SegmentSize sets the size at which a segment file is closed and a new one
// started (tidwall/wal's SegmentSize; a segment may end a little past it).
// Default 16 MiB, at least 4 KiB. Compaction frees whole generations, so the
// size only sets the granularity of files, not how much disk is kept.
func SegmentSize(bytes int) Option {
	return func(c *config) error {
		if bytes < minSegmentSize {
			return &isb.OptionError{Package: "wal", Option: "SegmentSize", Value: bytes, Reason: fmt.Sprintf("must be at least %d", minSegmentSize)}
		}
		c.segmentSize = bytes
		return nil
	}
}

// CompactEvery sets how often the log is compacted when a GC event closed a
// window since the last compaction. Default one minute; 0 turns the periodic
// compaction off (Open still compacts, and so does growth past
// CompactAfter).
func CompactEvery(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return &isb.OptionError{Package: "wal", Option: "CompactEvery", Value: d, Reason: "must not be negative"}
		}
		c.compactEvery = d
		return nil
	}
}

// CompactAfter sets the growth that triggers a compaction right after a
// write batch, when a window was closed since the last one: the log is
// compacted once it holds more than twice what the last compaction kept and
// at least bytes. Default two segments. Rewriting at twice the kept size
// makes each byte rewritten at most about once on average.
func CompactAfter(bytes int64) Option {
	return func(c *config) error {
		if bytes < 0 {
			return &isb.OptionError{Package: "wal", Option: "CompactAfter", Value: bytes, Reason: "must not be negative"}
		}
		c.compactMin = bytes
		return nil
	}
}

// MaxBatchBytes bounds how many bytes of concurrent appends the group commit
// coalesces into one write and fsync. Default 8 MiB; a single larger Append
// is still written whole, as one batch.
func MaxBatchBytes(bytes int) Option {
	return func(c *config) error {
		if bytes < 1 {
			return &isb.OptionError{Package: "wal", Option: "MaxBatchBytes", Value: bytes, Reason: "must be at least 1"}
		}
		c.maxBatch = bytes
		return nil
	}
}
