package memory

import (
	"fmt"

	"github.com/runnel-dev/runnel/isb"
)

// Option configures a memory Backend. Options are validated once, by New;
// an invalid one yields an *isb.OptionError naming it (errors.Is
// isb.ErrInvalidOption).
type Option func(*config)

// config is the validated form of the options.
type config struct {
	segmentSize int
	maxFree     int
}

const (
	// DefaultSegmentSize is the number of items per segment unless
	// SegmentSize says otherwise: large enough that a batch-1000 pull
	// rarely stops at a boundary, small enough that an idle partition holds
	// little memory.
	DefaultSegmentSize = 4096
	// DefaultMaxFreeSegments is how many recycled segments a partition keeps
	// for reuse unless MaxFreeSegments says otherwise.
	DefaultMaxFreeSegments = 4

	// MaxSegmentSize is the largest SegmentSize: a segment is allocated
	// whole (SegmentSize items) when the log needs one, and a pull never
	// returns more than one segment, while a consumer's BatchSize is at most
	// 100,000; 2^20 items is ten times that, so a larger segment only costs
	// memory.
	MaxSegmentSize = 1 << 20
	// MaxMaxFreeSegments is the largest MaxFreeSegments: the free list is a
	// cache of recycled segments, and 65,536 of the default size keep 2^28
	// items per partition, more than any buffer that drains needs to refill
	// without allocating.
	MaxMaxFreeSegments = 1 << 16
)

// SegmentSize sets the number of items per segment (default
// DefaultSegmentSize, at least 1, at most MaxSegmentSize). A pull never returns more than one
// segment's items, so it bounds the useful BatchSize.
func SegmentSize(n int) Option { return func(c *config) { c.segmentSize = n } }

// MaxFreeSegments bounds how many consumed segments each partition keeps for
// reuse (default DefaultMaxFreeSegments, at least 0, at most
// MaxMaxFreeSegments). Segments recycled beyond it are dropped for the
// garbage collector, so memory shrinks back after a burst. The list grows
// as segments are recycled: a bound never reached costs nothing.
func MaxFreeSegments(n int) Option { return func(c *config) { c.maxFree = n } }

func newConfig(opts []Option) (config, error) {
	c := config{segmentSize: DefaultSegmentSize, maxFree: DefaultMaxFreeSegments}
	if err := isb.ApplyOptions(&c, "memory.Option", opts); err != nil {
		return config{}, err
	}
	if c.segmentSize < 1 || c.segmentSize > MaxSegmentSize {
		return config{}, &isb.OptionError{Package: "memory", Option: "SegmentSize", Value: c.segmentSize, Reason: fmt.Sprintf("must be between 1 and %d", MaxSegmentSize)}
	}
	if c.maxFree < 0 || c.maxFree > MaxMaxFreeSegments {
		return config{}, &isb.OptionError{Package: "memory", Option: "MaxFreeSegments", Value: c.maxFree, Reason: fmt.Sprintf("must be between 0 and %d", MaxMaxFreeSegments)}
	}
	return c, nil
}
