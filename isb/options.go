package isb

import (
	"fmt"
	"go.uber.org/zap"
	"strings"
	"time"
)

// FullMode says what a producer does when the topic has no capacity left.
type FullMode int

const (
	// FullWait blocks the producer (cancellable, FIFO admission) until
	// enough capacity is released. A batch larger than the capacity is
	// stored in capacity-sized slices.
	FullWait FullMode = iota
	// FullFail rejects the whole batch with ErrFull.
	FullFail
)

// String returns "wait", "fail" or "FullMode(n)" for an unknown mode.
func (m FullMode) String() string {
	switch m {
	case FullWait:
		return "wait"
	case FullFail:
		return "fail"
	}
	return fmt.Sprintf("FullMode(%d)", int(m))
}

// TopicOption configures a topic. Options are validated once, by NewTopic;
// an invalid one yields an *OptionError naming it.
type TopicOption func(*topicConfig)

type topicConfig struct {
	partitions int
	capacity   int64 // 0: unbounded
	fullMode   FullMode
	log        *zap.Logger   // never nil after newTopicConfig
	stallAfter time.Duration // see StallReport
}

// TopicLogger sets where a topic logs what it finds on its own: a
// producer blocked on a full topic for StallReport, which groups hold the
// capacity and how far behind they are; a Pull waiting for data while
// its own consumer's uncommitted items fill the topic. Default: no log.
func TopicLogger(l *zap.Logger) TopicOption { return func(c *topicConfig) { c.log = l } }

// StallReport sets how long a producer waits for capacity (or a Pull for
// data while producers wait) before the topic logs it, and how often it
// logs again while the wait goes on (default 10 s, at least 1 ms). See
// TopicLogger.
func StallReport(d time.Duration) TopicOption { return func(c *topicConfig) { c.stallAfter = d } }

// defaultStallAfter is StallReport's default.
const defaultStallAfter = 10 * time.Second

// Partitions sets the number of partitions (default 1, between 1 and
// 65536).
func Partitions(n int) TopicOption { return func(c *topicConfig) { c.partitions = n } }

// Capacity bounds the number of items retained and not yet committed by
// every known group, over all partitions. 0 (the default) is unbounded; a
// bound is at most 2^46-1 (about 7*10^13) items.
func Capacity(n int64) TopicOption { return func(c *topicConfig) { c.capacity = n } }

// WithFullMode sets what producers do when the topic is full (default FullWait).
func WithFullMode(m FullMode) TopicOption { return func(c *topicConfig) { c.fullMode = m } }

// newTopicConfig applies opts over the defaults and validates the result
// once, so the rest of the package can trust the config.
func newTopicConfig(opts []TopicOption) (topicConfig, error) {
	c := topicConfig{partitions: 1, fullMode: FullWait, stallAfter: defaultStallAfter}
	if err := ApplyOptions(&c, "isb.TopicOption", opts); err != nil {
		return c, err
	}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	switch {
	case c.partitions < 1 || c.partitions > maxPartitions:
		return c, &OptionError{Option: "Partitions", Value: c.partitions, Reason: fmt.Sprintf("must be between 1 and %d", maxPartitions)}
	case c.capacity < 0 || c.capacity > maxCapacity:
		return c, &OptionError{Option: "Capacity", Value: c.capacity, Reason: fmt.Sprintf("must be 0 (unbounded) or between 1 and %d", int64(maxCapacity))}
	case c.fullMode != FullWait && c.fullMode != FullFail:
		return c, &OptionError{Option: "FullMode", Value: c.fullMode, Reason: "must be FullWait or FullFail"}
	case c.stallAfter < time.Millisecond:
		return c, &OptionError{Option: "StallReport", Value: c.stallAfter, Reason: "must be at least 1ms"}
	}
	return c, nil
}

// ConsumerOption configures pull and push consumers.
type ConsumerOption func(*consumerConfig)

type consumerConfig struct {
	batchSize    int
	maxWait      time.Duration // 0: a Pull waits for data without a bound
	manualCommit bool
	consumers    int           // push: goroutines (and consumers) in the group
	minBackoff   time.Duration // push, manual commit: first retry delay
	maxBackoff   time.Duration // push, manual commit: retry delay cap
	onError      func(partition int, offset int64, err error)
	log          *zap.Logger // never nil after newConsumerConfig
}

// maxBatchSize bounds BatchSize: far beyond it a typo such as
// BatchSize(1 << 40) would end the process out of memory, not with an
// error naming the option.
const maxBatchSize = 100_000

// MaxWait bounds how long a Pull waits for data, as a fetch's max wait
// does in nats.go: after d with nothing to read it returns an empty batch
// (Len 0) and no error, so that a caller can commit, report or decide to
// stop. Default 0: Pull waits until data comes or its context ends.
func MaxWait(d time.Duration) ConsumerOption { return func(c *consumerConfig) { c.maxWait = d } }

// BatchSize is the most items one Pull returns (default 100, at least 1,
// at most 100,000: a consumer allocates a batch of that many).
func BatchSize(n int) ConsumerOption { return func(c *consumerConfig) { c.batchSize = n } }

// ManualCommit turns auto commit off: progress moves only with Commit or
// CommitTo (pull), or when the handler returns nil (push).
func ManualCommit() ConsumerOption { return func(c *consumerConfig) { c.manualCommit = true } }

// Consumers sets how many consumers (push: goroutines) a push group runs
// (default 1, at most the partition count). PullConsumers takes the count
// as an argument instead.
func Consumers(n int) ConsumerOption { return func(c *consumerConfig) { c.consumers = n } }

// Backoff sets the retry delays of a failing push handler under manual
// commit: min doubles up to max (defaults 10ms and 1s).
func Backoff(min, max time.Duration) ConsumerOption {
	return func(c *consumerConfig) { c.minBackoff, c.maxBackoff = min, max }
}

// OnError is called when a push handler fails (or panics: a *PanicError):
// under auto commit the batch is then skipped, under manual commit it is
// retried with backoff. It is also called when pulling fails for a reason
// other than Stop or Close: with the partition and offset of a *ReadError
// (a damaged record, matching ErrCorrupt, is then skipped), or with
// partition -1 and offset -1. It may be called from several goroutines at
// once.
func OnError(f func(partition int, offset int64, err error)) ConsumerOption {
	return func(c *consumerConfig) { c.onError = f }
}

// Logger sets where a consumer logs what it does on its own: a damaged
// record stepped past with Skip (pull) or skipped by a push consumer, a
// handler panic. A nil logger (the default) logs nothing.
func Logger(l *zap.Logger) ConsumerOption { return func(c *consumerConfig) { c.log = l } }

// newConsumerConfig applies opts over the defaults and validates them for a
// topic of the given partition count.
func newConsumerConfig(partitions int, opts []ConsumerOption) (consumerConfig, error) {
	c := consumerConfig{
		batchSize:  100,
		consumers:  1,
		minBackoff: 10 * time.Millisecond,
		maxBackoff: time.Second,
	}
	if err := ApplyOptions(&c, "isb.ConsumerOption", opts); err != nil {
		return c, err
	}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	switch {
	case c.batchSize < 1 || c.batchSize > maxBatchSize:
		return c, &OptionError{Option: "BatchSize", Value: c.batchSize, Reason: fmt.Sprintf("must be between 1 and %d", maxBatchSize)}
	case c.consumers < 1 || c.consumers > partitions:
		return c, consumersError(c.consumers, partitions)
	case c.maxWait < 0:
		return c, &OptionError{Option: "MaxWait", Value: c.maxWait, Reason: "must be 0 (no bound) or positive"}
	case c.minBackoff <= 0 || c.maxBackoff < c.minBackoff:
		return c, &OptionError{Option: "Backoff", Value: fmt.Sprintf("min=%v max=%v", c.minBackoff, c.maxBackoff),
			Reason: "must satisfy 0 < min <= max"}
	}
	return c, nil
}

func consumersError(n, partitions int) error {
	return &OptionError{Option: "Consumers", Value: n,
		Reason: fmt.Sprintf("must be between 1 and the partition count %d", partitions)}
}

// validName checks that a topic name can be used as one path component by
// durable storage (a file or directory name), so every storage mode accepts
// the same topic names. Group names are free-form: durable storage escapes
// them (see isb/mmap), so any non-empty name is a group name.
func validName(option, name string) error {
	reason := ""
	switch {
	case name == "":
		reason = "must not be empty"
	case name == "." || name == "..":
		reason = "must not be . or .."
	case strings.ContainsAny(name, "/\x00"):
		reason = "must not contain '/' or NUL"
	default:
		return nil
	}
	return &OptionError{Option: option, Value: name, Reason: reason}
}
