package natsmsg

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/runnel-dev/runnel/vertex"
)

// The headers that carry a runnel message's metadata through NATS. They
// are read into the message's fields (and left out of its Headers) by
// both sources and written from them by both sinks, so a message written
// by a sink and read back by a source has the keys and event time it had.
const (
	// EventTimeHeader holds the event time, RFC 3339 with nanoseconds,
	// UTC. A value that does not parse is kept as a plain header, and the
	// message gets no event time from it.
	EventTimeHeader = "Runnel-Event-Time"
	// KeyHeader holds the keys, one header value per key, in order: NATS
	// headers are multi-valued, so keys need no encoding of their own.
	KeyHeader = "Runnel-Key"
	// MsgIDHeader is JetStream's deduplication header: the JetStream sink
	// sets it to the message ID, and the NATS core source takes a
	// message's ID from it when it is present.
	MsgIDHeader = "Nats-Msg-Id"
	// controlPrefix starts the headers NATS servers give a meaning to
	// (Nats-Expected-Stream, Nats-Rollup, Nats-TTL, ...). A sink never
	// writes a message's header of that prefix: copied from the stream a
	// message was read from to another, it would tell the server to check
	// or do something meant for the first.
	controlPrefix = "Nats-"
)

// ErrHeader is the cause a sink gives a message it cannot write as NATS
// headers: a header name or value, or a key, that NATS's text protocol
// cannot carry (a CR or LF, a ':' or space in a name). Resending it would
// fail the same way, so sinks answer vertex.ResultFallback for it.
var ErrHeader = errors.New("nats: message not representable as NATS headers")

// ToMessage fills m from a NATS message's headers h and data: the event
// time from EventTimeHeader, the keys from KeyHeader (or, when there is
// none, the subject's tokens at the positions keyTokens, see
// SubjectKeys), the other headers as Headers (of a header given several
// values, the last), data as Value (not copied). ID is left to the
// caller.
func ToMessage(subject string, h nats.Header, data []byte, keyTokens []int, m *vertex.Message[[]byte]) {
	m.Value = data
	for k, vs := range h {
		if len(vs) == 0 {
			continue
		}
		switch k {
		case KeyHeader:
			m.Keys = vs
			continue
		case EventTimeHeader:
			if t, err := time.Parse(time.RFC3339Nano, vs[len(vs)-1]); err == nil {
				m.EventTime = t
				continue
			}
		}
		if m.Headers == nil {
			m.Headers = make(map[string]string, len(h))
		}
		m.Headers[k] = vs[len(vs)-1]
	}
	if m.Keys == nil && len(keyTokens) > 0 {
		m.Keys = SubjectKeys(subject, keyTokens)
	}
}

// SubjectKeys returns the tokens of subject (split at '.') at the
// positions tokens, in that order; a position past the subject's last
// token gives "". A subject "orders.eu.42" with tokens {1, 2} gives the
// keys "eu", "42".
func SubjectKeys(subject string, tokens []int) []string {
	keys := make([]string, len(tokens))
	for i, t := range tokens {
		rest := subject
		for range t {
			j := strings.IndexByte(rest, '.')
			if j < 0 {
				rest = ""
				break
			}
			rest = rest[j+1:]
		}
		if j := strings.IndexByte(rest, '.'); j >= 0 {
			rest = rest[:j]
		}
		keys[i] = rest
	}
	return keys
}

// Header returns the NATS headers of m: its Headers but those starting
// with "Nats-" (see controlPrefix) and those that are runnel's own, its
// keys under KeyHeader, its event time (when set) under EventTimeHeader,
// and, when msgID, its ID under MsgIDHeader. A message that NATS cannot
// carry is an error wrapping ErrHeader. It returns nil for a message
// with nothing to put in headers.
func Header(m *vertex.Message[[]byte], msgID bool) (nats.Header, error) {
	n := len(m.Headers)
	if len(m.Keys) > 0 {
		n++
	}
	if !m.EventTime.IsZero() {
		n++
	}
	if msgID && m.ID != "" {
		n++
	}
	if n == 0 {
		return nil, nil
	}
	h := make(nats.Header, n)
	for k, v := range m.Headers {
		if strings.HasPrefix(k, controlPrefix) || k == KeyHeader || k == EventTimeHeader {
			continue
		}
		if err := checkName(k); err != nil {
			return nil, err
		}
		if err := checkValue("header "+k, v); err != nil {
			return nil, err
		}
		h[k] = []string{v}
	}
	if len(m.Keys) > 0 {
		for _, k := range m.Keys {
			if err := checkValue("key", k); err != nil {
				return nil, err
			}
		}
		h[KeyHeader] = m.Keys
	}
	if !m.EventTime.IsZero() {
		h[EventTimeHeader] = []string{m.EventTime.UTC().Format(time.RFC3339Nano)}
	}
	if msgID && m.ID != "" {
		if err := checkValue("ID", m.ID); err != nil {
			return nil, err
		}
		h[MsgIDHeader] = []string{m.ID}
	}
	return h, nil
}

// checkName refuses a header name NATS's protocol cannot carry.
func checkName(k string) error {
	if k == "" || strings.ContainsAny(k, ": \t\r\n") {
		return fmt.Errorf("%w: header name %q", ErrHeader, k)
	}
	return nil
}

// checkValue refuses a header value with a line break, which would end
// the header early.
func checkValue(what, v string) error {
	if strings.ContainsAny(v, "\r\n") {
		return fmt.Errorf("%w: %s %q holds a line break", ErrHeader, what, v)
	}
	return nil
}
