package kafka

import (
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
)

// Start says where a partition the consumer group has no committed offset
// for is read from.
type Start uint8

const (
	// FromEarliest reads such a partition from its oldest record.
	FromEarliest Start = iota
	// FromLatest reads only what is produced to it after the group joined.
	FromLatest
)

// SourceConfig configures [NewSource]. Brokers, Group and Topics are
// required; the other fields have the defaults their docs state.
type SourceConfig struct {
	// Brokers are the seed brokers, as host:port.
	Brokers []string
	// Group is the consumer group: its committed offsets are the source's
	// position, kept by Kafka, so a pipeline started again with the same
	// group resumes after what it committed.
	Group string
	// Topics are the topics the group consumes; each must exist when
	// NewSource is called.
	Topics []string
	// Start is where a partition without a committed offset is read from
	// (default FromEarliest).
	Start Start
	// PollInterval is how long a read waits for records before it returns
	// an empty batch (default 100ms): an idle read, which lets the source's
	// watermark advance (see pipeline.Watermarks).
	PollInterval time.Duration
	// CommitInterval is the least time between two commits of the group's
	// offsets (default 100ms). A commit covers every acknowledgement since
	// the one before; a crash repeats what was acknowledged after the last
	// commit that completed.
	CommitInterval time.Duration
	// StopAtEnd ends the source (io.EOF, so the pipeline drains and every
	// window closes) once it has read every partition of Topics up to the
	// end it had when NewSource was called: for a job over what the topics
	// hold, such as a backfill. A partition already committed to its end,
	// or empty, counts as read. Use it with a group no other process
	// consumes in: partitions assigned to another member never reach
	// their end here, and the source would not end.
	StopAtEnd bool
	// Logger logs failed commits (which the source retries at the next
	// commit) at a rate of one a second; nil logs nothing.
	Logger *zap.Logger
	// ClientOptions are further franz-go options (TLS, SASL, client ID,
	// fetch sizes, a logger), applied before the source's own, which
	// replace any given here: SeedBrokers, ConsumerGroup, ConsumeTopics,
	// ConsumeResetOffset, DisableAutoCommit, BlockRebalanceOnPoll and the
	// OnPartitions callbacks. The fetch size bounds how many records the
	// client decodes before it hands on the first: records that compress
	// well may read faster with a kgo.FetchMaxPartitionBytes below
	// franz-go's 1 MiB (docs/benchmarks.md, "Kafka source and sink").
	ClientOptions []kgo.Opt
}

// sourceConfig is a SourceConfig that passed validation, defaults filled
// in.
type sourceConfig struct {
	SourceConfig
}

// validate checks c and fills in its defaults; an invalid field is an
// *OptionError naming it.
func (c SourceConfig) validate() (sourceConfig, error) {
	if err := checkBrokers(c.Brokers); err != nil {
		return sourceConfig{}, err
	}
	switch {
	case c.Group == "":
		return sourceConfig{}, optionError("Group", c.Group, "needs a consumer group name")
	case len(c.Topics) == 0:
		return sourceConfig{}, optionError("Topics", c.Topics, "needs at least one topic")
	case c.Start > FromLatest:
		return sourceConfig{}, optionError("Start", c.Start, "must be FromEarliest or FromLatest")
	case c.PollInterval < 0:
		return sourceConfig{}, optionError("PollInterval", c.PollInterval, "must not be negative")
	case c.CommitInterval < 0:
		return sourceConfig{}, optionError("CommitInterval", c.CommitInterval, "must not be negative")
	}
	seen := make(map[string]bool, len(c.Topics))
	for _, t := range c.Topics {
		if err := checkTopic("Topics", t); err != nil {
			return sourceConfig{}, err
		}
		if seen[t] {
			return sourceConfig{}, optionError("Topics", t, "names a topic twice")
		}
		seen[t] = true
	}
	if c.PollInterval == 0 {
		c.PollInterval = 100 * time.Millisecond
	}
	if c.CommitInterval == 0 {
		c.CommitInterval = 100 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	c.Topics = append([]string(nil), c.Topics...)
	return sourceConfig{c}, nil
}

// SinkConfig configures [NewSink]. Brokers and Topic are required; the
// other fields have the defaults their docs state.
type SinkConfig struct {
	// Brokers are the seed brokers, as host:port.
	Brokers []string
	// Topic is the topic every message is produced to.
	Topic string
	// DeliveryTimeout bounds how long a write waits for its records to be
	// produced, the client's own retries included (default 10s): a record
	// not acknowledged by then is answered vertex.ResultRetry, so the
	// vertex's retry policy sees the failure, logs it and writes the
	// message again.
	DeliveryTimeout time.Duration
	// ClientOptions are further franz-go options (TLS, SASL, client ID,
	// linger, batch sizes, compression, a logger), applied after the
	// sink's default of no linger (kgo.ProducerLinger(0): a write waits
	// for its records anyway) and before SeedBrokers, which replaces any
	// given here. They must
	// leave the idempotent producer on: NewSink refuses
	// kgo.DisableIdempotentWrite. Leave kgo.RecordDeliveryTimeout out: it
	// counts from a record's timestamp, which is the message's event time,
	// so it fails at once the records of events older than it.
	ClientOptions []kgo.Opt
}

// sinkConfig is a SinkConfig that passed validation, defaults filled in.
type sinkConfig struct {
	SinkConfig
}

// validate checks c and fills in its defaults; an invalid field is an
// *OptionError naming it.
func (c SinkConfig) validate() (sinkConfig, error) {
	if err := checkBrokers(c.Brokers); err != nil {
		return sinkConfig{}, err
	}
	if err := checkTopic("Topic", c.Topic); err != nil {
		return sinkConfig{}, err
	}
	if c.DeliveryTimeout < 0 {
		return sinkConfig{}, optionError("DeliveryTimeout", c.DeliveryTimeout, "must not be negative")
	}
	if c.DeliveryTimeout == 0 {
		c.DeliveryTimeout = 10 * time.Second
	}
	return sinkConfig{c}, nil
}

// checkBrokers refuses no brokers, or an empty one.
func checkBrokers(brokers []string) error {
	if len(brokers) == 0 {
		return optionError("Brokers", brokers, "needs at least one seed broker")
	}
	for _, b := range brokers {
		if strings.TrimSpace(b) == "" {
			return optionError("Brokers", b, "must not hold an empty address")
		}
	}
	return nil
}

// checkTopic refuses what Kafka refuses as a topic name: empty, longer
// than 249 characters, "." or "..", or a character outside [a-zA-Z0-9._-]
// (the source's message IDs rely on a topic holding no '/').
func checkTopic(option, t string) error {
	switch {
	case t == "":
		return optionError(option, t, "needs a topic name")
	case len(t) > 249:
		return optionError(option, t, "is longer than the 249 characters Kafka allows")
	case t == "." || t == "..":
		return optionError(option, t, "is not a topic name Kafka allows")
	}
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return optionError(option, t, "may hold only letters, digits, '.', '_' and '-'")
		}
	}
	return nil
}
