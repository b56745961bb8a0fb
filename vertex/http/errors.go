package http

import (
	"errors"
	"fmt"

	"github.com/runnel-dev/runnel/vertex"
)

// Sentinel errors of package http, matched with errors.Is.
var (
	// ErrMalformed: a request body is not what its Content-Type says (the
	// source answers 400 with the error, which says where).
	ErrMalformed = errors.New("http: malformed body")
	// ErrUnsupportedType: a request's Content-Type is none the source
	// reads (it answers 415).
	ErrUnsupportedType = errors.New("http: unsupported content type")
	// ErrUnencodable: a value cannot be a record of the sink's Format (a
	// newline in a text line, a value that is not JSON); the sink answers
	// vertex.ResultFallback for it.
	ErrUnencodable = errors.New("http: value cannot be encoded")
	// ErrStatus is matched by every *StatusError.
	ErrStatus = errors.New("http: unexpected status")
)

// StatusError is the cause the sink gives for the messages of a POST
// answered with a status other than 2xx.
type StatusError struct {
	URL    string
	Status int    // the status code
	Body   string // the start of the response body, for the log
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("http: POST %s: status %d", e.URL, e.Status)
	if e.Body != "" {
		s += ": " + e.Body
	}
	return s
}

// Is makes errors.Is(err, ErrStatus) true.
func (e *StatusError) Is(target error) bool { return target == ErrStatus }

// optionError is an option of this package that failed validation.
func optionError(option string, value any, reason string) *vertex.OptionError {
	return &vertex.OptionError{Package: "http", Option: option, Value: value, Reason: reason}
}
