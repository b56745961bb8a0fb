package nats

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/runnel-dev/runnel/internal/natsmsg"
	"github.com/runnel-dev/runnel/vertex"
)

// Sink is a [vertex.Sink] publishing messages to NATS subjects; [NewSink]
// makes one, and the package doc says what it delivers. Replicas and
// concurrent writes share the connection.
type Sink struct {
	cfg sinkConfig
	out natsmsg.Outgoing

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
	return &Sink{cfg: c, out: natsmsg.Outgoing{Subject: c.Subject, SubjectOf: c.SubjectOf, ErrSubject: ErrSubject}}, nil
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
	results := natsmsg.NewResults(len(msgs))
	nc := s.cfg.Conn
	published := 0
	for i := range msgs {
		msg, err := s.out.Msg(&msgs[i])
		if err != nil {
			results.Fail(i, vertex.ResultFallback, err)
			continue
		}
		if err := nc.PublishMsg(msg); err != nil {
			results.Fail(i, vertex.ResultRetry, fmt.Errorf("%w: subject %q: %w", ErrPublish, msg.Subject, err))
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
				if !results.Failed(i) {
					results.Fail(i, vertex.ResultRetry, cause)
				}
			}
		}
	}
	return results.Done(&s.failed)
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
