package vertex

import (
	"fmt"
	"github.com/runnel-dev/runnel/isb"
)

// FullMode says what a writer does when a destination buffer is full.
type FullMode uint8

const (
	// WaitWhenFull blocks the writer until the destination has room:
	// backpressure reaches the sources.
	WaitWhenFull FullMode = iota
	// DiscardLatest drops the messages that do not fit and counts them as
	// dropped; their inputs are acked.
	DiscardLatest
)

// String returns "wait" or "discard-latest".
func (m FullMode) String() string {
	switch m {
	case WaitWhenFull:
		return "wait"
	case DiscardLatest:
		return "discard-latest"
	}
	return fmt.Sprintf("FullMode(%d)", m)
}

// Option configures a vertex. Options are validated once, when the
// pipeline starts; an invalid one yields an *OptionError naming it.
type Option func(*Config)

// Config is a vertex's validated configuration. Build it with [NewConfig].
type Config struct {
	Replicas       int         // replicas (forwarders) of the vertex
	Partitions     int         // partitions of the vertex's input buffer
	BatchSize      int         // most messages one read returns
	MaxInFlight    int         // most messages a replica holds unacked
	Concurrency    int         // UDF calls or sink writes in parallel per replica
	OrderByKey     bool        // process messages of one key in order
	PartitionByKey bool        // route the input buffer by keys
	Retry          RetryPolicy // for UDF and sink errors
	BufferCapacity int64       // input buffer capacity, 0 unbounded
	FullMode       FullMode    // default full behaviour of edges into the vertex

	given optionSet // the options passed, see Given
}

// optionSet holds one bit per option of this file, in optionNames order.
type optionSet uint16

const (
	givenReplicas optionSet = 1 << iota
	givenPartitions
	givenBatchSize
	givenMaxInFlight
	givenConcurrency
	givenOrderByKey
	givenPartitionByKey
	givenRetry
	givenBufferCapacity
	givenBufferFull
)

var optionNames = [...]string{"Replicas", "Partitions", "BatchSize", "MaxInFlight", "Concurrency",
	"OrderByKey", "PartitionByKey", "Retry", "BufferCapacity", "BufferFull"}

// InputOptions are the options that configure a vertex's input buffer and
// the reader and stage behind it; a vertex without input (a source) has
// none of these and the pipeline refuses them there.
var InputOptions = []string{"Partitions", "MaxInFlight", "Concurrency", "OrderByKey",
	"PartitionByKey", "Retry", "BufferCapacity", "BufferFull"}

// Given returns the names of the options passed to NewConfig (e.g.
// "Partitions"), in the order this package declares them, so a caller can
// refuse an option that does not apply to a vertex's kind.
func (c Config) Given() []string {
	var names []string
	for i, name := range optionNames {
		if c.given&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	return names
}

// option makes an Option that applies f and records that the option was
// given.
func option(bit optionSet, f func(*Config)) Option {
	return func(c *Config) { f(c); c.given |= bit }
}

// Defaults of a vertex without options.
const (
	DefaultBatchSize      = 500
	DefaultConcurrency    = 4
	DefaultBufferCapacity = 50_000
)

// Replicas sets how many forwarders run the vertex (default 1). Each owns
// some partitions of the input buffer, so Partitions must be at least
// Replicas.
func Replicas(n int) Option { return option(givenReplicas, func(c *Config) { c.Replicas = n }) }

// Partitions sets the partition count of the vertex's input buffer
// (default: Replicas; at least 1 and at least Replicas when given). A
// source has no input buffer: the pipeline refuses it there.
func Partitions(n int) Option { return option(givenPartitions, func(c *Config) { c.Partitions = n }) }

// BatchSize sets the most messages one read returns (default 500).
func BatchSize(n int) Option { return option(givenBatchSize, func(c *Config) { c.BatchSize = n }) }

// MaxInFlight bounds the messages a replica has read and not yet acked
// (default 4*BatchSize); it must be at least BatchSize.
func MaxInFlight(n int) Option {
	return option(givenMaxInFlight, func(c *Config) { c.MaxInFlight = n })
}

// Concurrency sets how many UDF calls (or sink writes) a replica runs at
// once (default 4). A reduce on durable storage runs one at a time and
// refuses more (see pipeline.Reduce).
func Concurrency(n int) Option {
	return option(givenConcurrency, func(c *Config) { c.Concurrency = n })
}

// OrderByKey processes the messages of one key in read order (one at a
// time per key) and routes the input buffer by keys so a key stays on one
// replica.
func OrderByKey() Option {
	return option(givenOrderByKey, func(c *Config) { c.OrderByKey, c.PartitionByKey = true, true })
}

// PartitionByKey routes messages into the vertex's partitions by a stable
// hash of their keys instead of round-robin.
func PartitionByKey() Option {
	return option(givenPartitionByKey, func(c *Config) { c.PartitionByKey = true })
}

// Retry sets the retry policy for UDF and sink errors; zero fields take
// [DefaultRetryPolicy]'s values.
func Retry(p RetryPolicy) Option { return option(givenRetry, func(c *Config) { c.Retry = p }) }

// BufferCapacity bounds the vertex's input buffer (default 50,000 over all
// partitions; 0 is unbounded).
func BufferCapacity(n int64) Option {
	return option(givenBufferCapacity, func(c *Config) { c.BufferCapacity = n })
}

// BufferFull sets what writers do when the input buffer is full (default
// WaitWhenFull); an edge can override it.
func BufferFull(m FullMode) Option {
	return option(givenBufferFull, func(c *Config) { c.FullMode = m })
}

// NewConfig applies opts over the defaults and validates the result.
func NewConfig(opts ...Option) (Config, error) {
	c := Config{Replicas: 1, BatchSize: DefaultBatchSize, Concurrency: DefaultConcurrency,
		BufferCapacity: DefaultBufferCapacity}
	if err := isb.ApplyOptions(&c, "vertex.Option", opts); err != nil {
		return c, err
	}
	// A default is taken only for an option not given: Partitions(0) or
	// MaxInFlight(0) is refused below, never read as "the default".
	if c.given&givenPartitions == 0 {
		c.Partitions = c.Replicas
	}
	if c.given&givenMaxInFlight == 0 {
		c.MaxInFlight = 4 * c.BatchSize
	}
	c.Retry = c.Retry.withDefaults()
	bad := func(opt string, v any, reason string) (Config, error) {
		return c, optionError(opt, v, reason)
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
	case c.FullMode > DiscardLatest:
		return bad("BufferFull", c.FullMode, "must be WaitWhenFull or DiscardLatest")
	case c.Retry.MaxAttempts < 1:
		return bad("Retry.MaxAttempts", c.Retry.MaxAttempts, "must be at least 1")
	case c.Retry.InitialBackoff < 0 || c.Retry.MaxBackoff < c.Retry.InitialBackoff:
		return bad("Retry.MaxBackoff", c.Retry.MaxBackoff, fmt.Sprintf("must be at least InitialBackoff (%v), both non-negative", c.Retry.InitialBackoff))
	case c.Retry.OnExhausted > ToFallback:
		return bad("Retry.OnExhausted", c.Retry.OnExhausted, "must be FailPipeline, DropMessage or ToFallback")
	}
	return c, nil
}
