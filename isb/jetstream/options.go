package jetstream

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/codec"
)

// Option configures a Backend. Options are validated once, by New; an
// invalid one yields an *isb.OptionError naming it. The defaults are what
// the package doc defends under "Defaults".
type Option func(*options)

type options struct {
	codec          any // codec.Codec[T], checked against T by New
	prefix         string
	replicas       int
	memory         bool
	maxMsgs        int64
	maxBytes       int64
	maxAge         time.Duration
	duplicates     time.Duration
	usageLimit     float64
	refresh        time.Duration
	maxOutstanding int
	ackTimeout     time.Duration
	retryTimeout   time.Duration
	requestTimeout time.Duration
	bucket         string
	claimTTL       time.Duration
	log            *zap.Logger
	onError        func(op string, err error)
	topic          []isb.TopicOption
	topicSet       bool
	packed         bool
	frameItems     int
	frameBytes     int
}

// config is the validated form of options; nothing else reads options.
type config[T any] struct {
	codec          codec.Codec[T]
	prefix         string
	replicas       int
	memory         bool
	maxMsgs        int64
	maxBytes       int64
	maxAge         time.Duration
	duplicates     time.Duration
	usageLimit     int64 // messages: UsageLimit * MaxMsgs, at least 1
	refresh        time.Duration
	maxOutstanding int
	ackTimeout     time.Duration
	retryTimeout   time.Duration
	requestTimeout time.Duration
	bucket         string
	claimTTL       time.Duration
	log            *zap.Logger // never nil
	onError        func(op string, err error)
	// shift is how many low bits of an offset index an item in its
	// message: frameShift when packed, 0 when every message is one item.
	shift      uint
	frameItems int
	frameBytes int // at most the server's max payload less room for headers (capped at Open)
}

// Defaults of the options.
const (
	DefaultMaxMsgs        = 100_000
	DefaultDuplicates     = 2 * time.Minute
	DefaultUsageLimit     = 0.8
	DefaultRefresh        = time.Second
	DefaultMaxOutstanding = 4096
	DefaultAckTimeout     = 5 * time.Second
	DefaultRetryTimeout   = time.Minute
	DefaultRequestTimeout = 5 * time.Second
	DefaultBucket         = "runnel-isb"
	DefaultClaimTTL       = 10 * time.Second
	DefaultFrameItems     = MaxFrameItems
	DefaultFrameBytes     = 1 << 20
)

// WithCodec sets the serializer of items (default codec.JSON[T]()). Its
// type parameter must be the topic's element type.
func WithCodec[T any](c codec.Codec[T]) Option { return func(o *options) { o.codec = c } }

// Prefix is put before every stream name of the backend (default none):
// streams are named {prefix}{topic}-{partition}, so a prefix keeps the
// topics of several pipelines or tenants apart on one server. It may hold
// letters, digits, '-' and '_'.
func Prefix(p string) Option { return func(o *options) { o.prefix = p } }

// Replicas sets the replicas of every stream and bucket (default 1,
// between 1 and 5). A cluster of three servers is run with 3.
func Replicas(n int) Option { return func(o *options) { o.replicas = n } }

// MemoryStorage keeps streams in the servers' memory instead of files:
// faster, lost when a server restarts.
func MemoryStorage() Option { return func(o *options) { o.memory = true } }

// MaxMsgs bounds the messages a partition's stream retains (default
// 100,000). The stream refuses messages past it (DiscardNew): it never
// discards what a group has not consumed. Producers see the buffer full
// earlier, at UsageLimit of it.
func MaxMsgs(n int64) Option { return func(o *options) { o.maxMsgs = n } }

// MaxBytes bounds the bytes a partition's stream retains (default
// unbounded, -1); like MaxMsgs it refuses messages past it.
func MaxBytes(n int64) Option { return func(o *options) { o.maxBytes = n } }

// MaxAge makes the server delete messages older than d (default 0: never).
// It is the one limit that removes data no group has consumed: use it only
// to bound what an abandoned group keeps.
func MaxAge(d time.Duration) Option { return func(o *options) { o.maxAge = d } }

// Duplicates is the window in which the server drops a message whose
// Nats-Msg-Id it stored already (default 2 minutes). A publish retried
// within it (after a lost acknowledgement) is stored once; it must be at
// least RetryTimeout.
func Duplicates(d time.Duration) Option { return func(o *options) { o.duplicates = d } }

// UsageLimit is the share of MaxMsgs that a partition may hold uncommitted
// by its slowest group before producers see it full (default 0.8, between
// 0 exclusive and 1). Below MaxMsgs so that producers of several
// processes, each knowing the usage only as of its last look, rarely reach
// the stream's own limit.
func UsageLimit(f float64) Option { return func(o *options) { o.usageLimit = f } }

// Refresh is how often the backend reads every partition's stream state
// (head, tail, retained messages), deletes what every group has committed,
// and notices changes that nothing announced (default 1s).
func Refresh(d time.Duration) Option { return func(o *options) { o.refresh = d } }

// MaxOutstanding bounds the asynchronous publishes of the backend waiting
// for their acknowledgement (default 4096); a publish past it waits.
func MaxOutstanding(n int) Option { return func(o *options) { o.maxOutstanding = n } }

// AckTimeout is how long a publish waits for its acknowledgement before it
// is sent again with the same message id (default 5s).
func AckTimeout(d time.Duration) Option { return func(o *options) { o.ackTimeout = d } }

// RetryTimeout is how long an append and a read retry through a lost
// connection or a restarting server before they fail (default 1 minute).
func RetryTimeout(d time.Duration) Option { return func(o *options) { o.retryTimeout = d } }

// RequestTimeout bounds each request to the server: a stream's info, a
// read, a commit (default 5s). Open fails with ErrUnreachable when the
// server does not answer its first request within it.
func RequestTimeout(d time.Duration) Option { return func(o *options) { o.requestTimeout = d } }

// Bucket names the KV bucket that holds the groups' commits (default
// "runnel-isb"); claims of group members are kept in Bucket + "-claims".
// Letters, digits, '-' and '_'.
func Bucket(name string) Option { return func(o *options) { o.bucket = name } }

// ClaimTTL is how long a member's claim of its partitions outlives its
// process (default 10s): the backend renews it every third of it, and a
// process that died frees its partitions once it expires.
func ClaimTTL(d time.Duration) Option { return func(o *options) { o.claimTTL = d } }

// Logger sets where the backend reports retries, decode failures and
// failed renewals (default none).
func Logger(l *zap.Logger) Option { return func(o *options) { o.log = l } }

// OnError calls f with every failed attempt to talk to the server: op
// "publish" for a round of publishes some of which were not acknowledged
// (retried, or the append's error), "fetch" for a read, and the
// operation's name ("commit", ...) for the other requests. It is what a
// pipeline's metrics count as storage errors. f must be quick and safe
// for concurrent use; nil, the default, calls nothing.
func OnError(f func(op string, err error)) Option { return func(o *options) { o.onError = f } }

// Packed stores many items per JetStream message: an append becomes one
// message per frame of up to FrameItems items and FrameBytes bytes, with
// one Nats-Msg-Id per frame (see "Packed streams" in the package doc). The
// server stores, acknowledges and deduplicates a frame at the cost of one
// message, which is what bounds a stream's rate: packed appends of a
// pipeline's batches store several times more items per second. Offsets
// are then (sequence-1)<<16 | index in the frame: strictly increasing,
// not contiguous from one frame to the next. A stream records whether it
// is packed (its runnel.format), and a backend opening it in the other
// format is refused with a *MismatchError.
func Packed() Option { return func(o *options) { o.packed = true } }

// FrameItems bounds the items of one frame of a packed stream (default
// and at most MaxFrameItems, 65,536).
func FrameItems(n int) Option { return func(o *options) { o.frameItems = n } }

// FrameBytes bounds the bytes of one frame of a packed stream (default
// 1 MiB, at least 256); Open lowers it to what the server accepts in one
// message (its max_payload, 1 MiB by default) less room for the headers.
// An item larger than it is a frame of its own, which the server refuses
// if it exceeds max_payload.
func FrameBytes(n int) Option { return func(o *options) { o.frameBytes = n } }

// Topic carries topic options (isb.Partitions, isb.WithFullMode) in
// NewTopic's one option list, as in isb/mmap. New refuses it.
func Topic(opts ...isb.TopicOption) Option {
	return func(o *options) { o.topic, o.topicSet = append(o.topic, opts...), true }
}

func newConfig[T any](opts []Option, forNewTopic bool) (config[T], []isb.TopicOption, error) {
	o := options{
		replicas: 1, maxMsgs: DefaultMaxMsgs, maxBytes: -1, duplicates: DefaultDuplicates,
		usageLimit: DefaultUsageLimit, refresh: DefaultRefresh, maxOutstanding: DefaultMaxOutstanding,
		ackTimeout: DefaultAckTimeout, retryTimeout: DefaultRetryTimeout, requestTimeout: DefaultRequestTimeout,
		bucket: DefaultBucket, claimTTL: DefaultClaimTTL, frameItems: DefaultFrameItems, frameBytes: DefaultFrameBytes,
	}
	if err := isb.ApplyOptions(&o, "jetstream.Option", opts); err != nil {
		return config[T]{}, nil, err
	}
	if o.topicSet && !forNewTopic {
		return config[T]{}, nil, optErr("Topic", len(o.topic), "configures NewTopic only; give a Backend's topic options to isb.NewTopic")
	}
	c, err := validate[T](o)
	return c, o.topic, err
}

func optErr(option string, value any, reason string) error {
	return &isb.OptionError{Package: "jetstream", Option: option, Value: value, Reason: reason}
}

func validate[T any](o options) (config[T], error) {
	c := config[T]{
		prefix: o.prefix, replicas: o.replicas, memory: o.memory, maxMsgs: o.maxMsgs, maxBytes: o.maxBytes,
		maxAge: o.maxAge, duplicates: o.duplicates, refresh: o.refresh, maxOutstanding: o.maxOutstanding,
		ackTimeout: o.ackTimeout, retryTimeout: o.retryTimeout, requestTimeout: o.requestTimeout,
		bucket: o.bucket, claimTTL: o.claimTTL, log: o.log, onError: o.onError,
		frameItems: o.frameItems, frameBytes: o.frameBytes,
	}
	if o.packed {
		c.shift = frameShift
	}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	switch cd := o.codec.(type) {
	case nil:
		c.codec = codec.JSON[T]()
	case codec.Codec[T]:
		if cd == nil {
			return c, optErr("WithCodec", nil, "must not be nil")
		}
		c.codec = cd
	default:
		var zero T
		return c, optErr("WithCodec", fmt.Sprintf("%T", o.codec), fmt.Sprintf("must be a codec.Codec[%T]", zero))
	}
	positive := []struct {
		name string
		d    time.Duration
	}{{"Refresh", o.refresh}, {"AckTimeout", o.ackTimeout}, {"RetryTimeout", o.retryTimeout},
		{"RequestTimeout", o.requestTimeout}, {"ClaimTTL", o.claimTTL}}
	for _, p := range positive {
		if p.d <= 0 {
			return c, optErr(p.name, p.d, "must be positive")
		}
	}
	switch {
	case !nameChars(o.prefix, true):
		return c, optErr("Prefix", o.prefix, "may hold letters, digits, '-' and '_' only")
	case !nameChars(o.bucket, false):
		return c, optErr("Bucket", o.bucket, "must be letters, digits, '-' and '_', not empty")
	case o.replicas < 1 || o.replicas > 5:
		return c, optErr("Replicas", o.replicas, "must be between 1 and 5")
	case o.maxMsgs < 1:
		return c, optErr("MaxMsgs", o.maxMsgs, "must be at least 1")
	case o.maxBytes == 0 || o.maxBytes < -1:
		return c, optErr("MaxBytes", o.maxBytes, "must be -1 (unbounded) or positive")
	case o.maxAge < 0:
		return c, optErr("MaxAge", o.maxAge, "must be 0 (never) or positive")
	case o.duplicates <= 0:
		return c, optErr("Duplicates", o.duplicates, "must be positive")
	case o.duplicates < o.retryTimeout:
		return c, optErr("Duplicates", o.duplicates, fmt.Sprintf("must be at least RetryTimeout (%v): a publish retried after it would be stored twice", o.retryTimeout))
	case !(o.usageLimit > 0 && o.usageLimit <= 1):
		return c, optErr("UsageLimit", o.usageLimit, "must be above 0 and at most 1")
	case o.maxOutstanding < 1:
		return c, optErr("MaxOutstanding", o.maxOutstanding, "must be at least 1")
	case o.frameItems < 1 || o.frameItems > MaxFrameItems:
		return c, optErr("FrameItems", o.frameItems, fmt.Sprintf("must be between 1 and %d", MaxFrameItems))
	case o.frameBytes < minFrameBytes:
		return c, optErr("FrameBytes", o.frameBytes, fmt.Sprintf("must be at least %d", minFrameBytes))
	}
	c.usageLimit = max(1, int64(o.usageLimit*float64(o.maxMsgs)))
	return c, nil
}

// minFrameBytes is the least FrameBytes: room for a frame's overhead and
// the lengths of a few items.
const minFrameBytes = 256

// packed reports whether the backend packs items into frames.
func (c *config[T]) packed() bool { return c.shift != 0 }

// nameChars reports whether s holds only letters, digits, '-' and '_'
// (and is not empty unless empty is allowed).
func nameChars(s string, empty bool) bool {
	if s == "" {
		return empty
	}
	for i := 0; i < len(s); i++ {
		if !plainByte(s[i]) && s[i] != '_' {
			return false
		}
	}
	return true
}

// failed reports a failed attempt of op to OnError's function. A read is
// reported as "fetch", the name the metrics give it.
func (c *config[T]) failed(op string, err error) {
	if c.onError == nil {
		return
	}
	if op == "read" {
		op = "fetch"
	}
	c.onError(op, err)
}
