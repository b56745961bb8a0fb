package jetstream

import (
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/internal/natsmsg"
	"github.com/runnel-dev/runnel/vertex"
)

// SourceConfig configures [NewSource]. Conn, Stream and Durable are
// required; the other fields have the defaults their docs state. With
// Bind, the consumer's own settings apply, and the fields that would set
// them (FilterSubjects, DeliverPolicy, AckWait, MaxAckPending) must be
// left zero.
type SourceConfig struct {
	// Conn is the connection to consume on; the caller owns it.
	Conn *nats.Conn
	// Stream is the stream the consumer reads.
	Stream string
	// Durable is the durable consumer's name: the consumer, which the
	// server keeps, is the source's position, so a pipeline started again
	// with it resumes after what it acknowledged.
	Durable string
	// Bind uses the consumer Durable as it exists (NewSource fails with
	// ErrConsumer when it does not); without it, NewSource creates the
	// consumer with the settings below, or updates an existing one to
	// them.
	Bind bool
	// FilterSubjects are the stream's subjects the consumer reads; none:
	// all of them.
	FilterSubjects []string
	// DeliverPolicy is where a new consumer starts: DeliverAllPolicy (the
	// default), DeliverLastPolicy, DeliverNewPolicy or
	// DeliverLastPerSubjectPolicy. It does not move an existing one.
	DeliverPolicy natsjs.DeliverPolicy
	// AckWait is how long the server waits for a message's
	// acknowledgement before it delivers it again (default 30s, at least
	// 300ms). The source tells the server every AckWait/3 that the
	// messages still in the pipeline are in progress, so it does not.
	AckWait time.Duration
	// MaxAckPending bounds the messages delivered and not yet
	// acknowledged (default 10000): the pipeline holds at most that many
	// of the consumer's messages in flight.
	MaxAckPending int
	// FetchBatch is how many messages a pull asks for (default 500); the
	// source holds up to that many more, fetched and not yet read.
	FetchBatch int
	// PollInterval is how long a read waits for a message before it
	// returns an empty batch (default 100ms): an idle read, which lets the
	// source's watermark advance (see pipeline.Watermarks).
	PollInterval time.Duration
	// StopAtEnd ends the source (io.EOF, so the pipeline drains and every
	// window closes) at the first idle read that finds the consumer with
	// nothing left to deliver and nothing waiting for acknowledgement:
	// for a job over what the stream holds, such as a backfill, while no
	// one publishes to it. A message delivered to a process that crashed
	// waits for acknowledgement until AckWait has passed and it is
	// delivered again, so the source does not end before then.
	StopAtEnd bool
	// KeyTokens are the positions (0-based) of the subject tokens that
	// become a message's keys when it has no KeyHeader; none: no keys.
	KeyTokens []int
	// Logger logs consume errors (missed heartbeats, a lost connection;
	// the client recovers from them by itself) and failed in-progress
	// acknowledgements at most once a second each; nil logs nothing.
	Logger *zap.Logger
}

// sourceConfig is a SourceConfig that passed validation, defaults filled
// in.
type sourceConfig struct {
	SourceConfig
}

// validate checks c and fills in its defaults; an invalid field is an
// *OptionError naming it.
func (c SourceConfig) validate() (sourceConfig, error) {
	if c.Conn == nil {
		return sourceConfig{}, optionError("Conn", c.Conn, "needs a connection")
	}
	if p := nameProblem(c.Stream); p != "" {
		return sourceConfig{}, optionError("Stream", c.Stream, p)
	}
	if p := nameProblem(c.Durable); p != "" {
		return sourceConfig{}, optionError("Durable", c.Durable, p)
	}
	for _, s := range c.FilterSubjects {
		if p := natsmsg.SubjectProblem(s, true); p != "" {
			return sourceConfig{}, optionError("FilterSubjects", s, p)
		}
	}
	switch c.DeliverPolicy {
	case natsjs.DeliverAllPolicy, natsjs.DeliverLastPolicy, natsjs.DeliverNewPolicy, natsjs.DeliverLastPerSubjectPolicy:
	default:
		return sourceConfig{}, optionError("DeliverPolicy", c.DeliverPolicy, "must be DeliverAllPolicy, DeliverLastPolicy, DeliverNewPolicy or DeliverLastPerSubjectPolicy")
	}
	switch {
	case c.AckWait < 0 || c.AckWait > 0 && c.AckWait < 300*time.Millisecond:
		return sourceConfig{}, optionError("AckWait", c.AckWait, "must be at least 300ms (0: the default)")
	case c.MaxAckPending < 0:
		return sourceConfig{}, optionError("MaxAckPending", c.MaxAckPending, "must not be negative")
	case c.FetchBatch < 0:
		return sourceConfig{}, optionError("FetchBatch", c.FetchBatch, "must not be negative")
	case c.PollInterval < 0:
		return sourceConfig{}, optionError("PollInterval", c.PollInterval, "must not be negative")
	}
	for _, t := range c.KeyTokens {
		if t < 0 {
			return sourceConfig{}, optionError("KeyTokens", c.KeyTokens, "must hold no negative position")
		}
	}
	if c.Bind {
		switch {
		case len(c.FilterSubjects) > 0:
			return sourceConfig{}, optionError("FilterSubjects", c.FilterSubjects, "must be left empty with Bind: the consumer's own apply")
		case c.DeliverPolicy != natsjs.DeliverAllPolicy:
			return sourceConfig{}, optionError("DeliverPolicy", c.DeliverPolicy, "must be left zero with Bind: the consumer's own applies")
		case c.AckWait != 0:
			return sourceConfig{}, optionError("AckWait", c.AckWait, "must be left zero with Bind: the consumer's own applies")
		case c.MaxAckPending != 0:
			return sourceConfig{}, optionError("MaxAckPending", c.MaxAckPending, "must be left zero with Bind: the consumer's own applies")
		}
	}
	if c.AckWait == 0 {
		c.AckWait = 30 * time.Second
	}
	if c.MaxAckPending == 0 {
		c.MaxAckPending = 10000
	}
	if c.FetchBatch == 0 {
		c.FetchBatch = 500
	}
	if c.PollInterval == 0 {
		c.PollInterval = 100 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	c.FilterSubjects = append([]string(nil), c.FilterSubjects...)
	c.KeyTokens = append([]int(nil), c.KeyTokens...)
	return sourceConfig{c}, nil
}

// nameProblem says what is wrong with a stream or consumer name, ""
// when nothing is: JetStream refuses empty names and those with white
// space, '.', '*', '>', '/' or '\' (the source's IDs rely on a stream
// name holding no '/').
func nameProblem(name string) string {
	switch {
	case name == "":
		return "needs a name"
	case strings.ContainsAny(name, " \t\r\n.*>/\\"):
		return "must not hold white space, '.', '*', '>', '/' or '\\'"
	}
	return ""
}

// SinkConfig configures [NewSink]. Conn and one of Subject and SubjectOf
// are required; the other fields have the defaults their docs state.
type SinkConfig struct {
	// Conn is the connection to publish on; the caller owns it.
	Conn *nats.Conn
	// Subject is the subject every message is published to; a stream
	// must hold it.
	Subject string
	// SubjectOf, instead of Subject, gives each message's subject; a
	// subject it returns that cannot be published to is the message's
	// ErrSubject, and the message goes to the vertex's fallback.
	SubjectOf func(m *vertex.Message[[]byte]) string
	// AckTimeout bounds the wait for a publish's acknowledgement (default
	// 10s): a message not acknowledged by then is answered
	// vertex.ResultRetry, so the vertex's retry policy sees the failure,
	// logs it and writes the message again (with the same Nats-Msg-Id, so
	// that one stored meanwhile is not stored twice).
	AckTimeout time.Duration
	// MaxPending bounds the publishes awaiting acknowledgement, over all
	// writes of the sink (default 4096); a write waits for room.
	MaxPending int
}

// sinkConfig is a SinkConfig that passed validation, defaults filled in.
type sinkConfig struct {
	SinkConfig
}

// validate checks c and fills in its defaults; an invalid field is an
// *OptionError naming it.
func (c SinkConfig) validate() (sinkConfig, error) {
	if err := natsmsg.CheckSink("jetstream", c.Conn, c.Subject, c.SubjectOf != nil); err != nil {
		return sinkConfig{}, err
	}
	switch {
	case c.AckTimeout < 0:
		return sinkConfig{}, optionError("AckTimeout", c.AckTimeout, "must not be negative")
	case c.MaxPending < 0:
		return sinkConfig{}, optionError("MaxPending", c.MaxPending, "must not be negative")
	}
	if c.AckTimeout == 0 {
		c.AckTimeout = 10 * time.Second
	}
	if c.MaxPending == 0 {
		c.MaxPending = 4096
	}
	return sinkConfig{c}, nil
}
