package nats

import (
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/internal/natsmsg"
	"github.com/runnel-dev/runnel/vertex"
)

// SourceConfig configures [NewSource]. Conn and Subject are required; the
// other fields have the defaults their docs state.
type SourceConfig struct {
	// Conn is the connection to subscribe on; the caller owns it.
	Conn *nats.Conn
	// Subject is the subject to subscribe to; wildcards are allowed.
	Subject string
	// Queue, when set, subscribes in that queue group: the server hands
	// each message to one member of the group, so several processes share
	// the subject's messages. Empty: every message to this source.
	Queue string
	// Pending is how many messages the source holds between the
	// subscription and the pipeline (default 65536); what comes while it
	// is full is dropped and counted (see the package doc).
	Pending int
	// PollInterval is how long a read waits for a message before it
	// returns an empty batch (default 100ms): an idle read, which lets the
	// source's watermark advance (see pipeline.Watermarks).
	PollInterval time.Duration
	// KeyTokens are the positions (0-based) of the subject tokens that
	// become a message's keys when it has no KeyHeader; none: no keys.
	KeyTokens []int
	// Logger logs dropped messages at most once a second; nil logs
	// nothing.
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
	if p := natsmsg.SubjectProblem(c.Subject, true); p != "" {
		return sourceConfig{}, optionError("Subject", c.Subject, p)
	}
	switch {
	case c.Pending < 0:
		return sourceConfig{}, optionError("Pending", c.Pending, "must not be negative")
	case c.PollInterval < 0:
		return sourceConfig{}, optionError("PollInterval", c.PollInterval, "must not be negative")
	}
	for _, t := range c.KeyTokens {
		if t < 0 {
			return sourceConfig{}, optionError("KeyTokens", c.KeyTokens, "must hold no negative position")
		}
	}
	if c.Queue != "" {
		if p := natsmsg.SubjectProblem(c.Queue, false); p != "" {
			return sourceConfig{}, optionError("Queue", c.Queue, p)
		}
	}
	if c.Pending == 0 {
		c.Pending = 65536
	}
	if c.PollInterval == 0 {
		c.PollInterval = 100 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	c.KeyTokens = append([]int(nil), c.KeyTokens...)
	return sourceConfig{c}, nil
}

// SinkConfig configures [NewSink]. Conn and one of Subject and SubjectOf
// are required; the other fields have the defaults their docs state.
type SinkConfig struct {
	// Conn is the connection to publish on; the caller owns it.
	Conn *nats.Conn
	// Subject is the subject every message is published to.
	Subject string
	// SubjectOf, instead of Subject, gives each message's subject; a
	// subject it returns that NATS cannot publish to is the message's
	// ErrSubject, and the message goes to the vertex's fallback.
	SubjectOf func(m *vertex.Message[[]byte]) string
	// FlushTimeout bounds the flush that ends a write (default 5s): a
	// write whose flush is not answered by then fails, and the batch is
	// written again.
	FlushTimeout time.Duration
}

// sinkConfig is a SinkConfig that passed validation, defaults filled in.
type sinkConfig struct {
	SinkConfig
}

// validate checks c and fills in its defaults; an invalid field is an
// *OptionError naming it.
func (c SinkConfig) validate() (sinkConfig, error) {
	if err := natsmsg.CheckSink("nats", c.Conn, c.Subject, c.SubjectOf != nil); err != nil {
		return sinkConfig{}, err
	}
	if c.FlushTimeout < 0 {
		return sinkConfig{}, optionError("FlushTimeout", c.FlushTimeout, "must not be negative")
	}
	if c.FlushTimeout == 0 {
		c.FlushTimeout = 5 * time.Second
	}
	return sinkConfig{c}, nil
}
