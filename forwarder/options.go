package forwarder

import (
	"fmt"

	"github.com/runnel-dev/runnel/internal/vconfig"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// Options is a vertex's validated configuration: what its vertex.Option
// values set. Build it with [NewOptions].
type Options = vconfig.Config[vertex.RetryPolicy]

// NewOptions applies opts over the defaults and validates the result; an
// invalid option is an *isb.OptionError with Package "vertex" naming it.
func NewOptions(opts ...vertex.Option) (Options, error) {
	return NewVertexOptions(nil, opts...)
}

// NewVertexOptions is NewOptions for a vertex running fn (its source or
// sink): when fn is a vertex.OptionsDefaulter, its DefaultOptions apply
// before opts (which win); when fn is a vertex.RetryDefaulter and opts set
// no policy (vertex.Retry), its DefaultRetry is the vertex's, validated as
// if given.
func NewVertexOptions(fn any, opts ...vertex.Option) (Options, error) {
	c := Options{Replicas: 1, BatchSize: vconfig.DefaultBatchSize, Concurrency: vconfig.DefaultConcurrency,
		BufferCapacity: vconfig.DefaultBufferCapacity}
	if d, ok := fn.(vertex.OptionsDefaulter); ok {
		// Applied on their own, so a nil option of the vertex's is
		// reported at its own index.
		if err := isb.ApplyOptions(&c, "vertex.OptionsDefaulter", d.DefaultOptions()); err != nil {
			return c, err
		}
	}
	if err := isb.ApplyOptions(&c, "vertex.Option", opts); err != nil {
		return c, err
	}
	// A default is taken only for an option not given: Partitions(0) or
	// MaxInFlight(0) is refused below, never read as "the default".
	if c.Set&vconfig.Partitions == 0 {
		c.Partitions = c.Replicas
	}
	if c.Set&vconfig.MaxInFlight == 0 {
		c.MaxInFlight = 4 * c.BatchSize
	}
	if d, ok := fn.(vertex.RetryDefaulter); ok && c.Set&vconfig.Retry == 0 {
		c.Retry = d.DefaultRetry()
	}
	c.Retry = retryWithDefaults(c.Retry)
	bad := func(opt string, v any, reason string) (Options, error) {
		return c, &isb.OptionError{Package: "vertex", Option: opt, Value: v, Reason: reason}
	}
	if err := checkBounds(c); err != nil {
		return c, err
	}
	switch {
	case c.Replicas < 1:
		return bad("Replicas", c.Replicas, "must be at least 1")
	case c.Partitions < 1:
		return bad("Partitions", c.Partitions, "must be at least 1")
	case c.Partitions < c.Replicas:
		return bad("Partitions", c.Partitions, fmt.Sprintf("must be at least Replicas (%d)", c.Replicas))
	case c.BatchSize < 1:
		return bad("BatchSize", c.BatchSize, "must be at least 1")
	case c.MaxInFlight < c.BatchSize:
		return bad("MaxInFlight", c.MaxInFlight, fmt.Sprintf("must be at least BatchSize (%d)", c.BatchSize))
	case c.Concurrency < 1:
		return bad("Concurrency", c.Concurrency, "must be at least 1")
	case c.BufferCapacity < 0:
		return bad("BufferCapacity", c.BufferCapacity, "must be 0 (unbounded) or positive")
	case c.Retry.MaxAttempts < 1:
		return bad("Retry.MaxAttempts", c.Retry.MaxAttempts, "must be at least 1 (vertex.UntilStopped: no limit)")
	case c.Retry.InitialBackoff < 0 || c.Retry.MaxBackoff < c.Retry.InitialBackoff:
		return bad("Retry.MaxBackoff", c.Retry.MaxBackoff, fmt.Sprintf("must be at least InitialBackoff (%v), both non-negative", c.Retry.InitialBackoff))
	case !(c.Retry.Jitter >= 0 && c.Retry.Jitter <= 1): // NaN too
		return bad("Retry.Jitter", c.Retry.Jitter, "must be in [0, 1]")
	case c.Retry.OnExhausted > vertex.ToFallback:
		return bad("Retry.OnExhausted", c.Retry.OnExhausted, "must be FailPipeline, DropMessage or ToFallback")
	}
	return c, nil
}

// checkBounds refuses a size above its bound (see vconfig.MaxBatchSize).
func checkBounds(c Options) error {
	for _, b := range []struct {
		option   string
		v, bound int
	}{
		{"Replicas", c.Replicas, vconfig.MaxReplicas},
		{"Partitions", c.Partitions, vconfig.MaxPartitions},
		{"BatchSize", c.BatchSize, vconfig.MaxBatchSize},
		{"MaxInFlight", c.MaxInFlight, vconfig.MaxMaxInFlight},
		{"Concurrency", c.Concurrency, vconfig.MaxConcurrency},
	} {
		if b.v > b.bound {
			return &isb.OptionError{Package: "vertex", Option: b.option, Value: b.v, Reason: fmt.Sprintf("must be at most %d", b.bound)}
		}
	}
	// BufferCapacity is an int64, checked apart so its error keeps its type.
	if c.BufferCapacity > vconfig.MaxBufferCapacity {
		return &isb.OptionError{Package: "vertex", Option: "BufferCapacity", Value: c.BufferCapacity,
			Reason: fmt.Sprintf("must be at most %d (0: unbounded)", int64(vconfig.MaxBufferCapacity))}
	}
	return nil
}

// defaultRetry is the retry policy of a vertex without vertex.Retry.
var defaultRetry = vertex.RetryPolicy{MaxAttempts: vconfig.DefaultMaxAttempts,
	InitialBackoff: vconfig.DefaultInitialBackoff, MaxBackoff: vconfig.DefaultMaxBackoff}

// retryWithDefaults fills the zero fields of p from defaultRetry.
func retryWithDefaults(p vertex.RetryPolicy) vertex.RetryPolicy {
	d := defaultRetry
	if p.MaxAttempts == 0 {
		p.MaxAttempts = d.MaxAttempts
	}
	if p.InitialBackoff == 0 {
		p.InitialBackoff = d.InitialBackoff
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = d.MaxBackoff
	}
	return p
}
