package mmap

import (
	"fmt"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/codec"
	"go.uber.org/zap"
)

// Option configures a Backend. Options are validated once, by New; an
// invalid one yields an *isb.OptionError naming it.
type Option func(*options)

type options struct {
	codec       any // codec.Codec[T], checked against T by New
	segmentSize int64
	flush       FlushPolicy
	retain      *int
	log         *zap.Logger
	onFlush     func(time.Duration)
	topic       []isb.TopicOption // Topic: for NewTopic only
	topicSet    bool
}

// config is the validated form of options.
type config[T any] struct {
	codec       codec.Codec[T]
	segmentSize int64
	flush       FlushPolicy
	retain      int         // -1: keep every segment
	log         *zap.Logger // never nil
	onFlush     func(time.Duration)
}

const (
	// DefaultSegmentSize is the size of a segment file unless SegmentSize says otherwise.
	DefaultSegmentSize = 256 << 20
	// MinSegmentSize is the smallest segment allowed: one page.
	MinSegmentSize = 4096
	// MaxSegmentSize is the largest: record positions are 32-bit.
	MaxSegmentSize = 1<<32 - 1
)

// WithCodec sets the serializer of items (default codec.JSON[T]()). Its
// type parameter must be the topic's element type.
func WithCodec[T any](c codec.Codec[T]) Option { return func(o *options) { o.codec = c } }

// SegmentSize sets the size of new segment files in bytes (default 256 MiB,
// between MinSegmentSize and MaxSegmentSize). Segments are preallocated at
// this size; an item whose record is larger cannot be stored. Existing
// segments keep the size they were created with.
func SegmentSize(n int64) Option { return func(o *options) { o.segmentSize = n } }

// Flush sets when appended records are flushed to disk (default Immediate()).
func Flush(p FlushPolicy) Option { return func(o *options) { o.flush = p } }

// MaxRetainedConsumedSegments keeps at most n segments that every known
// group has consumed, deleting the oldest beyond that. Without this option
// every segment is kept.
func MaxRetainedConsumedSegments(n int) Option { return func(o *options) { o.retain = &n } }

// Topic carries topic options (isb.Partitions, isb.Capacity,
// isb.WithFullMode) in NewTopic's one option list, beside the storage's:
//
//	mmap.NewTopic[Order](dir, "orders", mmap.Topic(isb.Partitions(4)), mmap.Flush(mmap.Batch(100)))
//
// New refuses it: a Backend built alone is handed to isb.NewTopic, which
// takes the topic options itself.
func Topic(opts ...isb.TopicOption) Option {
	return func(o *options) { o.topic, o.topicSet = append(o.topic, opts...), true }
}

// Logger sets where recovery reports what it repaired or found damaged:
// a torn tail cut off, a damaged record kept, a checkpoint rebuilt by
// scanning, a stray file left alone. A nil logger (the default) logs
// nothing.
func Logger(l *zap.Logger) Option { return func(o *options) { o.log = l } }

// OnFlush calls f after every flush (fdatasync) that made appended records
// durable, with the time it took: the flush latency a pipeline's metrics
// show. f runs on the flushing goroutine, with the partition's flush lock
// held, so it must be quick (an atomic add); nil, the default, calls
// nothing.
func OnFlush(f func(time.Duration)) Option { return func(o *options) { o.onFlush = f } }

// FlushPolicy says when records are flushed. Whatever the policy, a segment
// rollover and a commit are flush boundaries, and Close flushes.
type FlushPolicy struct {
	kind  flushKind
	every int
	after time.Duration
}

type flushKind int

const (
	flushUnset flushKind = iota
	flushImmediate
	flushBatch
	flushInterval
)

// Immediate flushes before every Append returns: a returned produce call is
// durable.
func Immediate() FlushPolicy { return FlushPolicy{kind: flushImmediate} }

// Batch flushes when at least n records are unflushed, before the Append
// that reached n returns. Up to n-1 acknowledged records may be lost in a
// crash of the machine (not of the process: the page cache keeps them).
func Batch(n int) FlushPolicy { return FlushPolicy{kind: flushBatch, every: n} }

// Interval flushes every d from a background goroutine. Records appended in
// the last d may be lost in a crash of the machine.
func Interval(d time.Duration) FlushPolicy { return FlushPolicy{kind: flushInterval, after: d} }

// String returns the policy as its constructor call, e.g. "Batch(100)".
func (p FlushPolicy) String() string {
	switch p.kind {
	case flushImmediate:
		return "Immediate"
	case flushBatch:
		return fmt.Sprintf("Batch(%d)", p.every)
	case flushInterval:
		return fmt.Sprintf("Interval(%v)", p.after)
	}
	return "unset"
}

// newConfig applies opts over the defaults and validates the result once.
// It returns the topic options of Topic apart; forNewTopic says whether
// the caller (NewTopic) takes them.
func newConfig[T any](opts []Option, forNewTopic bool) (config[T], []isb.TopicOption, error) {
	o := options{segmentSize: DefaultSegmentSize, flush: Immediate()}
	if err := isb.ApplyOptions(&o, "mmap.Option", opts); err != nil {
		return config[T]{}, nil, err
	}
	if o.topicSet && !forNewTopic {
		return config[T]{}, nil, &isb.OptionError{Package: "mmap", Option: "Topic", Value: len(o.topic),
			Reason: "configures NewTopic only; give a Backend's topic options to isb.NewTopic"}
	}
	c, err := validate[T](o)
	return c, o.topic, err
}

// validate checks the applied options and turns them into a config.
func validate[T any](o options) (config[T], error) {
	c := config[T]{segmentSize: o.segmentSize, flush: o.flush, retain: -1, log: o.log, onFlush: o.onFlush}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	switch cd := o.codec.(type) {
	case nil:
		c.codec = codec.JSON[T]()
	case codec.Codec[T]:
		if cd == nil {
			return c, &isb.OptionError{Package: "mmap", Option: "WithCodec", Value: nil, Reason: "must not be nil"}
		}
		c.codec = cd
	default:
		var zero T
		return c, &isb.OptionError{Package: "mmap", Option: "WithCodec", Value: fmt.Sprintf("%T", o.codec), Reason: fmt.Sprintf("must be a codec.Codec[%T]", zero)}
	}
	if o.segmentSize < MinSegmentSize || o.segmentSize > MaxSegmentSize {
		return c, &isb.OptionError{Package: "mmap", Option: "SegmentSize", Value: o.segmentSize, Reason: fmt.Sprintf("must be between %d and %d bytes", MinSegmentSize, int64(MaxSegmentSize))}
	}
	switch o.flush.kind {
	case flushImmediate:
	case flushBatch:
		if o.flush.every < 1 {
			return c, &isb.OptionError{Package: "mmap", Option: "Flush", Value: o.flush.every, Reason: "Batch(n) needs n >= 1"}
		}
	case flushInterval:
		if o.flush.after <= 0 {
			return c, &isb.OptionError{Package: "mmap", Option: "Flush", Value: o.flush.after, Reason: "Interval(d) needs d > 0"}
		}
	default:
		return c, &isb.OptionError{Package: "mmap", Option: "Flush", Value: o.flush, Reason: "use Immediate(), Batch(n) or Interval(d)"}
	}
	if o.retain != nil {
		if *o.retain < 0 {
			return c, &isb.OptionError{Package: "mmap", Option: "MaxRetainedConsumedSegments", Value: *o.retain, Reason: "must be at least 0"}
		}
		c.retain = *o.retain
	}
	return c, nil
}
