// Package vconfig is the configuration a vertex's options (vertex.Option)
// build: the fields the runtime reads and which options were given. The
// options set it and the runtime reads it (forwarder.NewOptions validates
// it), so it is internal: a pipeline author only passes options.
//
// Config is generic only so that this package needs not import vertex,
// whose options are functions of it: R is vertex.RetryPolicy (see
// forwarder.Options).
package vconfig

import "time"

// The defaults of a vertex without options, stated in the docs of vertex's
// options (BatchSize, Concurrency, BufferCapacity) and of RetryPolicy's
// fields; forwarder.NewOptions applies them.
const (
	DefaultBatchSize      = 500
	DefaultConcurrency    = 4
	DefaultBufferCapacity = 50_000

	DefaultMaxAttempts    = 5
	DefaultInitialBackoff = 10 * time.Millisecond
	DefaultMaxBackoff     = time.Second
)

// The upper bounds of the sizes a vertex's options set, stated in their
// docs. Each sizes memory taken at Run (a read buffer of BatchSize
// messages per replica, a goroutine per unit of Concurrency, a stream or
// file and a consumer per partition): far beyond them a typo such as
// BatchSize(1 << 40) would end the process with "out of memory" instead of
// an error naming the option. They are well above any sane setting.
const (
	MaxReplicas    = 1024
	MaxPartitions  = 4096
	MaxBatchSize   = 100_000
	MaxMaxInFlight = 10_000_000
	MaxConcurrency = 4096
	// MaxBufferCapacity bounds BufferCapacity, which on memory storage
	// sizes each partition's pool of recycled segments: 2^32 messages hold
	// a million in each of MaxPartitions partitions, and already take
	// hundreds of GiB of memory or disk at tens of bytes a message, far
	// below isb.Capacity's 2^46-1 and what a JetStream stream's MaxMsgs
	// (an int64, times jsstorage's retain factor 4) can hold. A buffer
	// meant to be larger is unbounded: BufferCapacity(0).
	MaxBufferCapacity = 1 << 32
)

// Config is a vertex's configuration.
type Config[R any] struct {
	Replicas        int   // replicas (forwarders) of the vertex
	Partitions      int   // partitions of the vertex's input buffer
	BatchSize       int   // most messages one read returns
	MaxInFlight     int   // most messages a replica holds unacked
	Concurrency     int   // UDF calls or sink writes in parallel per replica
	OrderByKey      bool  // process messages of one key in order
	PartitionByKey  bool  // route the input buffer by keys
	Retry           R     // for UDF, sink and source errors
	BufferCapacity  int64 // input buffer capacity, 0 unbounded
	DiscardWhenFull bool  // edges into the vertex drop what does not fit

	Set Set // the options given, see Given
}

// Set holds one bit per vertex option, in the order of [Given]'s names.
type Set uint16

// The bits of a [Set], one per vertex option.
const (
	Replicas Set = 1 << iota
	Partitions
	BatchSize
	MaxInFlight
	Concurrency
	OrderByKey
	PartitionByKey
	Retry
	BufferCapacity
	DiscardWhenFull
)

var names = [...]string{"Replicas", "Partitions", "BatchSize", "MaxInFlight", "Concurrency",
	"OrderByKey", "PartitionByKey", "Retry", "BufferCapacity", "DiscardWhenFull"}

// InputOptions are the options that configure a vertex's input buffer and
// the reader and stage behind it; a vertex without input (a source) has
// none of these and the pipeline refuses them there. Retry is not one: on a
// source it applies to the source's Read and Ack errors.
var InputOptions = []string{"Partitions", "MaxInFlight", "Concurrency", "OrderByKey",
	"PartitionByKey", "BufferCapacity", "DiscardWhenFull"}

// Given returns the names of the options given (e.g. "Partitions"), in the
// order vertex declares them, so a caller can refuse an option that does
// not apply to a vertex's kind.
func (c Config[R]) Given() []string {
	var out []string
	for i, name := range names {
		if c.Set&(1<<i) != 0 {
			out = append(out, name)
		}
	}
	return out
}
