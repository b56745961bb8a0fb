package natsmsg

import (
	"fmt"
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"github.com/runnel-dev/runnel/vertex"
)

// Outgoing is how a sink addresses its messages: one subject, or one per
// message when SubjectOf is set, and whether the message ID goes out as
// MsgIDHeader (JetStream's deduplication).
type Outgoing struct {
	Subject   string
	SubjectOf func(*vertex.Message[[]byte]) string
	MsgID     bool
	// ErrSubject is the sink package's sentinel for a subject SubjectOf
	// made that NATS cannot publish to.
	ErrSubject error
}

// Msg returns m as the NATS message to publish. A subject NATS refuses
// (wrapping ErrSubject) or metadata NATS headers cannot carry (ErrHeader)
// is an error: the sink answers vertex.ResultFallback for it, as
// resending would fail the same way.
func (o Outgoing) Msg(m *vertex.Message[[]byte]) (*nats.Msg, error) {
	subject := o.Subject
	if o.SubjectOf != nil {
		subject = o.SubjectOf(m)
		if p := SubjectProblem(subject, false); p != "" {
			return nil, fmt.Errorf("%w: %q %s", o.ErrSubject, subject, p)
		}
	}
	h, err := Header(m, o.MsgID)
	if err != nil {
		return nil, err
	}
	return &nats.Msg{Subject: subject, Header: h, Data: m.Value}, nil
}

// Results are the answers of one sink Write of n messages, built as
// messages fail. Until the first failure there are none: a Write that
// wrote everything returns nil results without allocating.
type Results struct {
	n      int
	res    []vertex.Result
	causes []error
}

// NewResults returns the answers of a Write of n messages, all written.
func NewResults(n int) Results { return Results{n: n} }

// Fail answers message i with r, for cause err.
func (r *Results) Fail(i int, res vertex.Result, err error) {
	if r.res == nil {
		r.res, r.causes = make([]vertex.Result, r.n), make([]error, r.n)
	}
	r.res[i], r.causes[i] = res, err
}

// Failed reports whether message i was answered with a failure.
func (r *Results) Failed(i int) bool { return r.res != nil && r.causes[i] != nil }

// Done returns what the Write returns: nil, nil when every message was
// written, else the results and a *vertex.WriteError with each cause. The
// messages answered vertex.ResultRetry are added to failed.
func (r *Results) Done(failed *atomic.Int64) ([]vertex.Result, error) {
	if r.res == nil {
		return nil, nil
	}
	for _, res := range r.res {
		if res == vertex.ResultRetry {
			failed.Add(1)
		}
	}
	return r.res, &vertex.WriteError{Causes: r.causes}
}
