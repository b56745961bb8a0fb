package jsstorage

import (
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/jetstream"
	"github.com/runnel-dev/runnel/watermark/jskv"
)

// Option configures a Storage. Options are checked once, by New; an
// invalid one is an *isb.OptionError naming it.
type Option func(*options)

// options is what the Options set; config is its checked form.
type options struct {
	reduceLogDir   string
	buffer         []jetstream.Option
	watermark      []jskv.Option
	stateReplicas  int
	stateStorage   natsjs.StorageType
	requestTimeout time.Duration
	retryTimeout   time.Duration
	packed         bool
}

// config is the checked form of options; nothing else reads options.
type config struct {
	reduceLogDir   string
	buffer         []jetstream.Option
	stateReplicas  int
	stateStorage   natsjs.StorageType
	requestTimeout time.Duration
	retryTimeout   time.Duration
	packed         bool
}

// DefaultRequestTimeout bounds each request of the state bucket.
const DefaultRequestTimeout = 5 * time.Second

// ReduceLogDir is the directory under which the reduce vertices run by
// this process keep their write-ahead logs, {dir}/{pipeline}.wal/{vertex}
// (required). A log is read back only by the process that runs its
// replica, so it stays on that process's local disk; without one a
// durable storage would lose every open window in a restart, so New
// refuses to go without it.
func ReduceLogDir(dir string) Option { return func(o *options) { o.reduceLogDir = dir } }

// BufferOptions are passed to every isb/jetstream backend of the
// pipeline's buffers (jetstream.Replicas, ClaimTTL, MemoryStorage,
// UsageLimit, ...), before the storage's own: Prefix, Bucket and WithCodec
// are the storage's (see the package doc), and MaxMsgs is the vertex's
// BufferCapacity.
func BufferOptions(opts ...jetstream.Option) Option {
	return func(o *options) { o.buffer = append(o.buffer, opts...) }
}

// Unpacked stores one JetStream message per message of the pipeline in
// its buffers, instead of frames of many messages (jetstream.Packed, the
// default): the server's cost per stored message is what bounds a
// pipeline on JetStream, and packing lifts BenchmarkJetStreamPipeline from
// 22-77K msg/s unpacked to 300-840K packed on the same machine
// (docs/benchmarks.md, "Packed appends"). Unpacked buffers are for tools
// that read the streams message by message, and for a pipeline whose
// streams were created unpacked: a buffer's streams record their format,
// and a pipeline reopened with the other one is refused with a
// *jetstream.MismatchError (setting "format").
func Unpacked() Option { return func(o *options) { o.packed = false } }

// WatermarkOptions configure the watermark store (jskv.WithReplicas,
// WithStorage, WithTTL, ...).
func WatermarkOptions(opts ...jskv.Option) Option {
	return func(o *options) { o.watermark = append(o.watermark, opts...) }
}

// StateReplicas sets the replicas of the state bucket (1 to 5; default 1).
// A cluster of three servers runs 3, with jetstream.Replicas(3) in
// BufferOptions and jskv.WithReplicas(3) in WatermarkOptions.
func StateReplicas(n int) Option { return func(o *options) { o.stateReplicas = n } }

// StateStorage keeps the state bucket in files (natsjs.FileStorage, the
// default: the sources' positions and the run survive a server restart)
// or in memory (natsjs.MemoryStorage).
func StateStorage(st natsjs.StorageType) Option { return func(o *options) { o.stateStorage = st } }

// RequestTimeout bounds each request to the state bucket (default 5s).
func RequestTimeout(d time.Duration) Option { return func(o *options) { o.requestTimeout = d } }

// RetryTimeout is how long a request to the state bucket (a source's
// position saved as it acks, the run record) is retried while it fails
// for a reason that heals (jetstream.Transient: the server restarting, a
// leader election, a timeout), each attempt bounded by RequestTimeout;
// default jetstream.DefaultRetryTimeout, as the buffers' own appends and
// reads (set theirs with BufferOptions(jetstream.RetryTimeout)). Without
// the retries a server restart failed the run of the process whose
// generator saved its position during it.
func RetryTimeout(d time.Duration) Option { return func(o *options) { o.retryTimeout = d } }

func optErr(option string, value any, reason string) error {
	return &isb.OptionError{Package: "jsstorage", Option: option, Value: value, Reason: reason}
}

func newConfig(opts []Option) (config, options, error) {
	o := options{stateReplicas: 1, stateStorage: natsjs.FileStorage, requestTimeout: DefaultRequestTimeout,
		retryTimeout: jetstream.DefaultRetryTimeout, packed: true}
	if err := isb.ApplyOptions(&o, "jsstorage.Option", opts); err != nil {
		return config{}, o, err
	}
	c := config{reduceLogDir: o.reduceLogDir, buffer: o.buffer, stateReplicas: o.stateReplicas,
		stateStorage: o.stateStorage, requestTimeout: o.requestTimeout, retryTimeout: o.retryTimeout, packed: o.packed}
	switch {
	case o.reduceLogDir == "":
		return c, o, optErr("ReduceLogDir", "", "is required: durable storage without a reduce log would lose every open window in a restart")
	case o.stateReplicas < 1 || o.stateReplicas > 5:
		return c, o, optErr("StateReplicas", o.stateReplicas, "must be between 1 and 5")
	case o.stateStorage != natsjs.FileStorage && o.stateStorage != natsjs.MemoryStorage:
		return c, o, optErr("StateStorage", int(o.stateStorage), "must be FileStorage or MemoryStorage")
	case o.requestTimeout <= 0:
		return c, o, optErr("RequestTimeout", o.requestTimeout, "must be positive")
	case o.retryTimeout < 0:
		return c, o, optErr("RetryTimeout", o.retryTimeout, "must not be negative (0: no retries)")
	}
	for i, bo := range o.buffer {
		if bo == nil {
			return c, o, isb.NilOption("jsstorage.BufferOptions", i, len(o.buffer))
		}
	}
	return c, o, nil
}
