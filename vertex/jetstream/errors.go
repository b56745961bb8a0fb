package jetstream

import (
	"errors"

	"github.com/runnel-dev/runnel/internal/natsmsg"
	"github.com/runnel-dev/runnel/vertex"
)

// The headers a runnel message's keys and event time travel in (see the
// package doc); vertex/nats uses the same.
const (
	KeyHeader       = natsmsg.KeyHeader
	EventTimeHeader = natsmsg.EventTimeHeader
	// MsgIDHeader is JetStream's Nats-Msg-Id, which the Sink sets to the
	// message's ID.
	MsgIDHeader = natsmsg.MsgIDHeader
)

// Sentinel errors of package jetstream, matched with errors.Is.
var (
	// ErrClosed is returned by a Read, Ack or Write after Close.
	ErrClosed = errors.New("jetstream: closed")
	// ErrConsumer wraps the error of a durable consumer NewSource could
	// neither find (Bind) nor create, or one it cannot read from (not a
	// pull consumer with explicit acknowledgements).
	ErrConsumer = errors.New("jetstream: consumer unavailable")
	// ErrConsume wraps an error that ended the source's consumption (the
	// consumer or stream was deleted); Read returns it.
	ErrConsume = errors.New("jetstream: consume failed")
	// ErrUnknownAck is returned by Source.Ack for a batch the source did
	// not hand out, or acknowledged already.
	ErrUnknownAck = errors.New("jetstream: ack of messages the source did not read")
	// ErrPublish wraps the error of a message the Sink could not publish
	// or whose acknowledgement did not come; it is answered
	// vertex.ResultRetry.
	ErrPublish = errors.New("jetstream: publish failed")
	// ErrSubject is the cause of a message whose subject, as
	// SinkConfig.SubjectOf gave it, cannot be published to; it is
	// answered vertex.ResultFallback.
	ErrSubject = errors.New("jetstream: invalid subject")
	// ErrHeader is the cause of a message the Sink cannot write as NATS
	// headers (a line break in a key, header value or ID, a header name
	// with ':' or a space); it is answered vertex.ResultFallback.
	ErrHeader = natsmsg.ErrHeader
)

// optionError is a configuration field that failed validation: a
// vertex.OptionError of package "jetstream", matching
// pipeline.ErrInvalidOption as every runnel option error does.
func optionError(option string, value any, reason string) *vertex.OptionError {
	return &vertex.OptionError{Package: "jetstream", Option: option, Value: value, Reason: reason}
}
