package nats

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"github.com/runnel-dev/runnel/internal/natsmsg"
	"github.com/runnel-dev/runnel/vertex"
)

// Sink is a [vertex.Sink] publishing messages to NATS subjects; [NewSink]
// makes one, and the package doc says what it delivers. Replicas and
// concurrent writes share the connection.
type Sink struct {
	cfg sinkConfig

	mu     sync.RWMutex // held for reading by writes, for writing by Close
	closed bool

	failed atomic.Int64
}

// NewSink validates cfg. An invalid field of cfg is an *OptionError
// naming it (errors.Is(err, pipeline.ErrInvalidOption)).
func NewSink(cfg SinkConfig) (*Sink, error) {
	c, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	return &Sink{cfg: c}, nil
}

// Write publishes msgs, then flushes the connection, so that it returns
// once the server has them. A publish or flush that fails answers
// vertex.ResultRetry with its cause (ErrPublish) for the messages it
// concerns; a message NATS cannot carry (ErrHeader, ErrSubject) is
// answered vertex.ResultFallback. Write after Close is ErrClosed.
func (s *Sink) Write(ctx context.Context, msgs []vertex.Message[[]byte]) ([]vertex.Result, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	var (
		res    []vertex.Result
		causes []error
	)
	fail := func(i int, r vertex.Result, err error) {
		if res == nil {
			res, causes = make([]vertex.Result, len(msgs)), make([]error, len(msgs))
		}
		res[i], causes[i] = r, err
	}
	nc := s.cfg.Conn
	published := 0
	for i := range msgs {
		m := &msgs[i]
		subject := s.cfg.Subject
		if s.cfg.SubjectOf != nil {
			subject = s.cfg.SubjectOf(m)
			if p := natsmsg.SubjectProblem(subject, false); p != "" {
				fail(i, vertex.ResultFallback, fmt.Errorf("%w: %q %s", ErrSubject, subject, p))
				continue
			}
		}
		h, err := natsmsg.Header(m, false)
		if err != nil {
			fail(i, vertex.ResultFallback, err)
			continue
		}
		if err := nc.PublishMsg(&nats.Msg{Subject: subject, Header: h, Data: m.Value}); err != nil {
			fail(i, vertex.ResultRetry, fmt.Errorf("%w: subject %q: %w", ErrPublish, subject, err))
			continue
		}
		published++
	}
	if published > 0 {
		fctx, cancel := context.WithTimeout(ctx, s.cfg.FlushTimeout)
		err := nc.FlushWithContext(fctx)
		cancel()
		if err != nil {
			cause := fmt.Errorf("%w: flush: %w", ErrPublish, err)
			for i := range msgs {
				if res == nil || (res[i] == vertex.ResultOK && causes[i] == nil) {
					fail(i, vertex.ResultRetry, cause)
				}
			}
		}
	}
	if res == nil {
		return nil, nil
	}
	for _, r := range res {
		if r == vertex.ResultRetry {
			s.failed.Add(1)
		}
	}
	return res, &vertex.WriteError{Causes: causes}
}

// DefaultRetry is vertex.RemoteRetry: a sink vertex on it retries failed
// writes until the pipeline stops, unless its options set a policy
// (vertex.Retry), which wins (see [vertex.RetryDefaulter]).
func (s *Sink) DefaultRetry() vertex.RetryPolicy { return vertex.RemoteRetry }

// Failed returns how many messages failed to be published (and were
// answered vertex.ResultRetry) since the sink was made.
func (s *Sink) Failed() int64 { return s.failed.Load() }

// Close waits for the writes in flight; the connection stays open (the
// caller's). It is idempotent.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
