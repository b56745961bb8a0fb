package vertex

import "github.com/runnel-dev/runnel/internal/vconfig"

// Option configures a vertex. Options are validated once, when the
// pipeline starts; an invalid one yields an *OptionError naming it.
type Option func(*options)

// options is what the options set, read by the runtime.
type options = vconfig.Config[RetryPolicy]

// option makes an Option that applies f and records that the option was
// given.
func option(bit vconfig.Set, f func(*options)) Option {
	return func(c *options) { f(c); c.Set |= bit }
}

// Replicas sets how many forwarders run the vertex (default 1). Each owns
// some partitions of the input buffer, so Partitions must be at least
// Replicas. At most 1024.
func Replicas(n int) Option { return option(vconfig.Replicas, func(c *options) { c.Replicas = n }) }

// Partitions sets the partition count of the vertex's input buffer
// (default: Replicas; at least 1 and at least Replicas when given; at most
// 4096). A source has no input buffer: the pipeline refuses it there.
func Partitions(n int) Option {
	return option(vconfig.Partitions, func(c *options) { c.Partitions = n })
}

// BatchSize sets the most messages one read returns (default 500, or what
// the vertex's source or sink asks for: [OptionsDefaulter]; at most
// 100,000: each replica allocates a buffer of that many at Run).
func BatchSize(n int) Option { return option(vconfig.BatchSize, func(c *options) { c.BatchSize = n }) }

// MaxInFlight bounds the messages a replica has read and not yet acked
// (default 4*BatchSize); it must be at least BatchSize and at most
// 10,000,000.
func MaxInFlight(n int) Option {
	return option(vconfig.MaxInFlight, func(c *options) { c.MaxInFlight = n })
}

// Concurrency sets how many UDF calls (or sink writes) a replica runs at
// once (default 4, at most 4096). A reduce on durable storage runs one at a time and
// refuses more (see pipeline.Reduce).
func Concurrency(n int) Option {
	return option(vconfig.Concurrency, func(c *options) { c.Concurrency = n })
}

// OrderByKey processes the messages of one key in read order (one at a
// time per key) and routes the input buffer by keys so a key stays on one
// replica.
func OrderByKey() Option {
	return option(vconfig.OrderByKey, func(c *options) { c.OrderByKey, c.PartitionByKey = true, true })
}

// PartitionByKey routes messages into the vertex's partitions by a stable
// hash of their keys instead of round-robin.
func PartitionByKey() Option {
	return option(vconfig.PartitionByKey, func(c *options) { c.PartitionByKey = true })
}

// Retry sets the retry policy for UDF and sink errors, and on a source
// vertex for its Read and Ack errors; zero fields take the defaults their
// docs state. Without it: a source or sink that is a [RetryDefaulter] has
// its DefaultRetry (the connectors: [RemoteRetry], until the pipeline
// stops), another source fails the pipeline at its first error, and the
// rest have 5 attempts, backoff from 10ms to 1s, then FailPipeline.
func Retry(p RetryPolicy) Option { return option(vconfig.Retry, func(c *options) { c.Retry = p }) }

// OptionsDefaulter is implemented by a [Source] or [Sink] that knows the
// vertex options it runs best with, typically a connector whose writes or
// reads wait on another system, so that more messages per batch keep more
// of them in flight. Its DefaultOptions apply before the vertex's own
// options, so an option the vertex gives wins, and a default an option
// derives from another (MaxInFlight is 4*BatchSize) derives from the
// result.
type OptionsDefaulter interface {
	DefaultOptions() []Option
}

// BufferCapacity bounds the vertex's input buffer (default 50,000 over all
// partitions; 0 is unbounded; at most 2^32 = 4,294,967,296, a million
// messages in each of 4096 partitions: a larger one is refused, so a typo
// such as BufferCapacity(1 << 45) is an error naming the option, not
// memory sized from it at Run).
func BufferCapacity(n int64) Option {
	return option(vconfig.BufferCapacity, func(c *options) { c.BufferCapacity = n })
}

// DiscardWhenFull makes writers into the vertex drop (and count as
// dropped) the messages that do not fit in its input buffer, acking their
// inputs, instead of waiting for room. Without it a full buffer blocks the
// writer, so backpressure reaches the sources. One edge can discard alone:
// pipeline's Stream.DiscardWhenFull.
func DiscardWhenFull() Option {
	return option(vconfig.DiscardWhenFull, func(c *options) { c.DiscardWhenFull = true })
}
