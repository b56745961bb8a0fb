package nats

import (
	"errors"

	"github.com/runnel-dev/runnel/internal/natsmsg"
	"github.com/runnel-dev/runnel/vertex"
)

// The headers a runnel message's keys and event time travel in (see the
// package doc); vertex/jetstream uses the same.
const (
	KeyHeader       = natsmsg.KeyHeader
	EventTimeHeader = natsmsg.EventTimeHeader
)

// Sentinel errors of package nats, matched with errors.Is.
var (
	// ErrClosed is returned by a Read or Write after Close.
	ErrClosed = errors.New("nats: closed")
	// ErrSubscribe wraps the error of a subscription NewSource could not
	// make.
	ErrSubscribe = errors.New("nats: subscribe failed")
	// ErrPublish wraps the error of a publish or flush the Sink could not
	// make; the batch is written again.
	ErrPublish = errors.New("nats: publish failed")
	// ErrHeader is the cause of a message the Sink cannot write as NATS
	// headers (a line break in a key or header value, a header name with
	// ':' or a space); it is answered vertex.ResultFallback, since writing
	// it again would fail the same way.
	ErrHeader = natsmsg.ErrHeader
)

// optionError is a configuration field that failed validation: a
// vertex.OptionError of package "nats", matching
// pipeline.ErrInvalidOption as every runnel option error does.
func optionError(option string, value any, reason string) *vertex.OptionError {
	return &vertex.OptionError{Package: "nats", Option: option, Value: value, Reason: reason}
}

// ErrSubject is the cause of a message whose subject, as
// SinkConfig.SubjectOf gave it, NATS cannot publish to; it is answered
// vertex.ResultFallback.
var ErrSubject = errors.New("nats: invalid subject")
