package jetstream

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/internal/natsmsg"
	"github.com/runnel-dev/runnel/vertex"
)

// Sink is a [vertex.Sink] publishing messages to JetStream streams;
// [NewSink] makes one, and the package doc says what it delivers.
// Replicas and concurrent writes share one JetStream context and its
// bound on pending publishes.
type Sink struct {
	cfg sinkConfig
	out natsmsg.Outgoing
	js  natsjs.JetStream

	mu     sync.RWMutex // held for reading by writes, for writing by Close
	closed bool

	failed     atomic.Int64
	duplicates atomic.Int64
}

// NewSink validates cfg. An invalid field of cfg is an *OptionError
// naming it (errors.Is(err, pipeline.ErrInvalidOption)).
func NewSink(cfg SinkConfig) (*Sink, error) {
	c, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	// The client's own timeout fails a publish whose acknowledgement is
	// lost (the server went away with it), so that it does not hold a
	// place among the pending ones for ever.
	js, err := natsjs.New(c.Conn, natsjs.WithPublishAsyncMaxPending(c.MaxPending),
		natsjs.WithPublishAsyncTimeout(c.AckTimeout))
	if err != nil {
		return nil, fmt.Errorf("jetstream: sink: %w", err)
	}
	out := natsmsg.Outgoing{Subject: c.Subject, SubjectOf: c.SubjectOf, MsgID: true, ErrSubject: ErrSubject}
	return &Sink{cfg: c, out: out, js: js}, nil
}

// Write publishes msgs asynchronously, each with its ID as Nats-Msg-Id,
// and waits for every acknowledgement: nil results when all are stored
// (or were already, within the stream's duplicate window: see
// Duplicates), else vertex.ResultRetry for each that failed or was not
// acknowledged within AckTimeout, with its cause (ErrPublish) in a
// *vertex.WriteError; a message NATS cannot carry (ErrHeader,
// ErrSubject) is answered vertex.ResultFallback. Write after Close is
// ErrClosed.
func (s *Sink) Write(ctx context.Context, msgs []vertex.Message[[]byte]) ([]vertex.Result, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	results := natsmsg.NewResults(len(msgs))
	futures := make([]natsjs.PubAckFuture, len(msgs))
	for i := range msgs {
		msg, err := s.out.Msg(&msgs[i])
		if err != nil {
			results.Fail(i, vertex.ResultFallback, err)
			continue
		}
		// A full set of pending publishes waits up to AckTimeout for room.
		f, err := s.js.PublishMsgAsync(msg, natsjs.WithStallWait(s.cfg.AckTimeout))
		if err != nil {
			results.Fail(i, vertex.ResultRetry, fmt.Errorf("%w: subject %q: %w", ErrPublish, msg.Subject, err))
			continue
		}
		futures[i] = f
	}
	// The client times each publish out after AckTimeout; the timer is a
	// bound in case an answer never comes at all. Once it has fired, the
	// rest are only looked at: an answer already there counts.
	timer := time.NewTimer(s.cfg.AckTimeout + time.Second)
	defer timer.Stop()
	var dups int64
	expired := false
	for i, f := range futures {
		if f == nil {
			continue
		}
		var (
			ack *natsjs.PubAck
			err error
		)
		if !expired {
			select {
			case ack = <-f.Ok():
			case err = <-f.Err():
			case <-ctx.Done():
				err = ctx.Err()
			case <-timer.C:
				expired = true
			}
		}
		if expired {
			select {
			case ack = <-f.Ok():
			case err = <-f.Err():
			default:
				err = fmt.Errorf("no acknowledgement within %v", s.cfg.AckTimeout)
			}
		}
		switch {
		case err != nil:
			results.Fail(i, vertex.ResultRetry, fmt.Errorf("%w: subject %q: %w", ErrPublish, f.Msg().Subject, err))
		case ack.Duplicate:
			dups++
		}
	}
	s.duplicates.Add(dups)
	return results.Done(&s.failed)
}

// DefaultRetry is vertex.RemoteRetry: a sink vertex on it retries failed
// messages until the pipeline stops, unless its options set a policy
// (vertex.Retry), which wins (see [vertex.RetryDefaulter]).
func (s *Sink) DefaultRetry() vertex.RetryPolicy { return vertex.RemoteRetry }

// Failed returns how many messages failed to be published (and were
// answered vertex.ResultRetry) since the sink was made.
func (s *Sink) Failed() int64 { return s.failed.Load() }

// Duplicates returns how many publishes the streams acknowledged as
// duplicates (a Nats-Msg-Id seen within their duplicate window) and did
// not store again: messages written again after a retry or a restart.
func (s *Sink) Duplicates() int64 { return s.duplicates.Load() }

// Close waits for the writes in flight; the connection stays open (the
// caller's). It is idempotent.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
