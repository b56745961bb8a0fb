package memory

import "github.com/runnel-dev/runnel/isb"

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
)

// SegmentSize sets the number of items per segment (default
// DefaultSegmentSize, at least 1). A pull never returns more than one
// segment's items, so it bounds the useful BatchSize.
func SegmentSize(n int) Option { return func(c *config) { c.segmentSize = n } }

// MaxFreeSegments bounds how many consumed segments each partition keeps for
// reuse (default DefaultMaxFreeSegments, at least 0). Segments recycled
// beyond it are dropped for the garbage collector, so memory shrinks back
// after a burst.
func MaxFreeSegments(n int) Option { return func(c *config) { c.maxFree = n } }

func newConfig(opts []Option) (config, error) {
	c := config{segmentSize: DefaultSegmentSize, maxFree: DefaultMaxFreeSegments}
	if err := isb.ApplyOptions(&c, "memory.Option", opts); err != nil {
		return config{}, err
	}
	if c.segmentSize < 1 {
		return config{}, &isb.OptionError{Package: "memory", Option: "SegmentSize", Value: c.segmentSize, Reason: "must be at least 1"}
	}
	if c.maxFree < 0 {
		return config{}, &isb.OptionError{Package: "memory", Option: "MaxFreeSegments", Value: c.maxFree, Reason: "must not be negative"}
	}
	return c, nil
}
