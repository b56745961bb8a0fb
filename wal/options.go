package wal

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/isb"
)

// Option configures Open. Options are validated once, by Open; an invalid
// one (nil included) yields an *isb.OptionError naming it.
type Option func(*config)

// config is the validated form of the options, built once by Open.
type config struct {
	segmentSize  int
	compactEvery time.Duration
	compactMin   int64
	compactSet   bool // CompactAfter was given
	maxBatch     int

	meta          map[string]string // Metadata
	seedOffsets   map[int32]int64   // Seed
	seedWatermark time.Time
	log           *zap.Logger // never nil after newConfig
	onCommit      func(time.Duration)
}

// DefaultSegmentSize is the segment size without a SegmentSize option.
// tidwall/wal keeps the newest segment's bytes in a slice it grows by
// appending: past a few MiB every growth copies and faults in megabytes,
// which held a reduce at about half the rate a 4 MiB segment allows.
const DefaultSegmentSize = 4 << 20

// MaxSegmentSize and MaxMaxBatchBytes bound SegmentSize and MaxBatchBytes:
// tidwall/wal keeps the newest segment's bytes in memory (read whole at
// Open, grown by each write until the segment reaches SegmentSize), and a
// group commit gathers up to MaxBatchBytes of appends into one write, so
// each sizes memory a WAL holds. 1 GiB is 256 times the default segment
// and 128 times the default batch; far beyond it a typo such as
// SegmentSize(1 << 40) would end the process with "out of memory" instead
// of an error naming the option.
const (
	MaxSegmentSize   = 1 << 30
	MaxMaxBatchBytes = 1 << 30
)

const (
	minSegmentSize      = 4 << 10
	defaultCompactEvery = time.Minute
	defaultMaxBatch     = 8 << 20
)

func newConfig(opts []Option) (config, error) {
	c := config{segmentSize: DefaultSegmentSize, compactEvery: defaultCompactEvery, maxBatch: defaultMaxBatch}
	if err := isb.ApplyOptions(&c, "wal.Option", opts); err != nil {
		return config{}, err
	}
	bad := func(option string, v any, reason string) (config, error) {
		return config{}, &isb.OptionError{Package: "wal", Option: option, Value: v, Reason: reason}
	}
	switch {
	case c.segmentSize < minSegmentSize:
		return bad("SegmentSize", c.segmentSize, fmt.Sprintf("must be at least %d", minSegmentSize))
	case c.segmentSize > MaxSegmentSize:
		return bad("SegmentSize", c.segmentSize, fmt.Sprintf("must be at most %d", MaxSegmentSize))
	case c.compactEvery < 0:
		return bad("CompactEvery", c.compactEvery, "must not be negative")
	case c.compactMin < 0:
		return bad("CompactAfter", c.compactMin, "must not be negative")
	case c.maxBatch < 1:
		return bad("MaxBatchBytes", c.maxBatch, "must be at least 1")
	case c.maxBatch > MaxMaxBatchBytes:
		return bad("MaxBatchBytes", c.maxBatch, fmt.Sprintf("must be at most %d", MaxMaxBatchBytes))
	case checkTime("watermark", c.seedWatermark) != nil:
		return bad("Seed", c.seedWatermark, "the watermark must lie in the years 1678-2261")
	}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	if !c.compactSet {
		c.compactMin = 2 * int64(c.segmentSize)
	}
	return c, nil
}

// SegmentSize sets the size at which a segment file is closed and a new one
// started (tidwall/wal's SegmentSize; a segment may end a little past it).
// Default 4 MiB (DefaultSegmentSize), at least 4 KiB, at most 1 GiB
// (MaxSegmentSize: the newest segment is held in memory). Compaction frees
// whole generations, so the size only sets the granularity of files, not
// how much disk is kept.
func SegmentSize(bytes int) Option { return func(c *config) { c.segmentSize = bytes } }

// CompactEvery sets how often the log is compacted when a GC event closed a
// window since the last compaction. Default one minute; 0 turns the periodic
// compaction off (Open still compacts, and so does growth past
// CompactAfter).
func CompactEvery(d time.Duration) Option { return func(c *config) { c.compactEvery = d } }

// CompactAfter sets the growth that triggers a compaction right after a
// write batch, when a window was closed since the last one: the log is
// compacted once it holds more than twice what the last compaction kept and
// at least bytes. Default two segments. Rewriting at twice the kept size
// makes each byte rewritten at most about once on average.
func CompactAfter(bytes int64) Option {
	return func(c *config) { c.compactMin, c.compactSet = bytes, true }
}

// MaxBatchBytes bounds how many bytes of concurrent appends the group commit
// coalesces into one write and fsync. Default 8 MiB, at least 1, at most
// 1 GiB (MaxMaxBatchBytes); a single larger Append is still written whole,
// as one batch.
func MaxBatchBytes(bytes int) Option { return func(c *config) { c.maxBatch = bytes } }

// Logger sets where Open reports what it repaired: a torn tail cut (with
// the intact entries of the unacknowledged batch cut with it), a write
// batch a crash cut short and ended, what a compaction left behind and was
// removed. The same is in Recovered. A nil logger (the default) logs
// nothing.
func Logger(l *zap.Logger) Option { return func(c *config) { c.log = l } }

// OnCommit calls f after every group commit that succeeded, with the time
// its write and fsync took: the commit latency a pipeline's metrics show.
// f runs on the committer goroutine, so it must be quick (an atomic add);
// nil, the default, calls nothing.
func OnCommit(f func(time.Duration)) Option { return func(c *config) { c.onCommit = f } }
