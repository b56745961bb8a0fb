package kafka

import (
	"errors"

	"github.com/runnel-dev/runnel/vertex"
)

// Sentinel errors of package kafka, matched with errors.Is.
var (
	// ErrClosed is returned by a Read, Ack or Write after Close.
	ErrClosed = errors.New("kafka: closed")
	// ErrUnknownAck is returned by Source.Ack for a message whose ID the
	// source did not make (see Source).
	ErrUnknownAck = errors.New("kafka: ack of a message the source did not read")
	// ErrTopic is returned by NewSource when a topic it is to read cannot
	// be described (it does not exist, or is not authorized).
	ErrTopic = errors.New("kafka: topic unavailable")
	// ErrFetch wraps an error a fetch reported that the client does not
	// retry by itself; Read returns it.
	ErrFetch = errors.New("kafka: fetch failed")
	// ErrProduce wraps the error of a record the Sink could not produce;
	// the message is answered vertex.ResultRetry.
	ErrProduce = errors.New("kafka: produce failed")
)

// optionError is a configuration field that failed validation: a
// vertex.OptionError of package "kafka", matching
// pipeline.ErrInvalidOption as every runnel option error does.
func optionError(option string, value any, reason string) *vertex.OptionError {
	return &vertex.OptionError{Package: "kafka", Option: option, Value: value, Reason: reason}
}
