package jetstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/internal/natsmsg"
	"github.com/runnel-dev/runnel/internal/ratelog"
	"github.com/runnel-dev/runnel/vertex"
)

// Source is a [vertex.Source] reading a JetStream stream through a
// durable pull consumer; [NewSource] makes one, and the package doc says
// what it delivers. Its replicas (vertex.Replicas) share one consumption.
type Source struct {
	cfg     sourceConfig
	cons    natsjs.Consumer
	cc      natsjs.ConsumeContext
	q       *natsmsg.Queue[natsjs.Msg]
	ackWait time.Duration
	bufs    sync.Pool // of *[]natsjs.Msg, a read's

	consumeErrs ratelog.Log
	keeper      keeper

	// hasOver says over may hold messages, so that a read looks there
	// without the lock only when it might.
	hasOver atomic.Bool

	mu sync.Mutex
	// flying are the batches handed out and not yet acknowledged, by the
	// ID of their first message (a list: a message delivered again while
	// an earlier delivery is still in flight has the same ID).
	flying map[string][][]natsjs.Msg
	// over are messages the keeper took out of the queue to keep them in
	// progress (the queue cannot be looked into): reads hand them out
	// before the queue's.
	over   []natsjs.Msg
	fatal  error // what ended the consumption, for Read to return
	ended  bool  // StopAtEnd: io.EOF returned
	closed bool

	redelivered atomic.Int64
}

// NewSource validates cfg, then binds to the durable consumer cfg.Durable
// of cfg.Stream (Bind) or creates (or updates) it with cfg's settings,
// and starts consuming. An invalid field of cfg is an *OptionError naming
// it (errors.Is(err, pipeline.ErrInvalidOption)); a consumer that cannot
// be had is ErrConsumer.
//
// The source holds a consumption and a goroutine (the in-progress
// keeper) from then on: Close releases them, and the pipeline calls
// Close when it stops.
func NewSource(ctx context.Context, cfg SourceConfig) (*Source, error) {
	c, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	js, err := natsjs.New(c.Conn)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConsumer, err)
	}
	s := &Source{cfg: c, flying: map[string][][]natsjs.Msg{}}
	if c.Bind {
		s.cons, err = js.Consumer(ctx, c.Stream, c.Durable)
	} else {
		s.cons, err = js.CreateOrUpdateConsumer(ctx, c.Stream, natsjs.ConsumerConfig{
			Durable:        c.Durable,
			AckPolicy:      natsjs.AckExplicitPolicy,
			AckWait:        c.AckWait,
			MaxAckPending:  c.MaxAckPending,
			DeliverPolicy:  c.DeliverPolicy,
			FilterSubjects: c.FilterSubjects,
		})
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %q of stream %q: %w", ErrConsumer, c.Durable, c.Stream, err)
	}
	info := s.cons.CachedInfo()
	switch {
	case info.Config.AckPolicy != natsjs.AckExplicitPolicy:
		return nil, fmt.Errorf("%w: %q of stream %q acknowledges %v; the source needs explicit acknowledgements", ErrConsumer, c.Durable, c.Stream, info.Config.AckPolicy)
	case info.Config.DeliverSubject != "":
		return nil, fmt.Errorf("%w: %q of stream %q is a push consumer; the source needs a pull consumer", ErrConsumer, c.Durable, c.Stream)
	}
	s.ackWait = info.Config.AckWait
	if s.ackWait <= 0 {
		s.ackWait = 30 * time.Second // the server's default
	}
	s.consumeErrs = ratelog.Log{Log: c.Logger, Msg: "jetstream source: consume error; the client recovers"}
	// The queue holds what one pull brings: nats.go pulls again when half
	// of it is consumed, so a source that is not read holds at most about
	// two pulls' worth in the client.
	s.q = natsmsg.NewQueue[natsjs.Msg](c.FetchBatch)
	s.cc, err = s.cons.Consume(s.receive,
		natsjs.PullMaxMessages(c.FetchBatch),
		natsjs.ConsumeErrHandler(s.consumeError))
	if err != nil {
		return nil, fmt.Errorf("%w: consume %q of stream %q: %w", ErrConsumer, c.Durable, c.Stream, err)
	}
	s.keeper.start(s)
	return s, nil
}

// receive is the consumption's callback: it queues m, waiting for room,
// so that a slow pipeline slows the pulls down (nats.go pulls more as
// its own buffer empties) instead of losing or piling up messages.
func (s *Source) receive(m natsjs.Msg) {
	s.q.Put(m) // false once closed: m is delivered again (see Close)
}

// consumeError is the consumption's error handler: terminal errors (the
// consumer or its stream deleted) end the consumption, and Read returns
// them; the others the client recovers from by itself, and they are
// logged.
func (s *Source) consumeError(_ natsjs.ConsumeContext, err error) {
	if errors.Is(err, natsjs.ErrConsumerDeleted) || errors.Is(err, natsjs.ErrConsumerNotFound) ||
		errors.Is(err, natsjs.ErrStreamNotFound) {
		s.mu.Lock()
		if s.fatal == nil {
			s.fatal = fmt.Errorf("%w: %q of stream %q: %w", ErrConsume, s.cfg.Durable, s.cfg.Stream, err)
		}
		s.mu.Unlock()
	}
	s.consumeErrs.Failure(err, zap.String("stream", s.cfg.Stream), zap.String("consumer", s.cfg.Durable))
}

// Read returns up to max messages, an empty batch when none came within
// the poll interval, or io.EOF (StopAtEnd, once the consumer has nothing
// left).
func (s *Source) Read(ctx context.Context, max int) ([]vertex.Message[[]byte], error) {
	if max <= 0 {
		return nil, nil
	}
	buf := make([]vertex.Message[[]byte], max)
	n, err := s.ReadInto(ctx, buf)
	if n == 0 {
		return nil, err
	}
	return buf[:n], err
}

// ReadInto is Read into buf, which it fills with up to len(buf) messages
// (see [vertex.BufferedSource]).
func (s *Source) ReadInto(ctx context.Context, buf []vertex.Message[[]byte]) (int, error) {
	s.mu.Lock()
	closed, ended, fatal := s.closed, s.ended, s.fatal
	s.mu.Unlock()
	switch {
	case closed:
		return 0, ErrClosed
	case ended:
		return 0, io.EOF
	}
	mp, _ := s.bufs.Get().(*[]natsjs.Msg)
	if mp == nil || cap(*mp) < len(buf) {
		ms := make([]natsjs.Msg, len(buf))
		mp = &ms
	}
	ms := (*mp)[:len(buf)]
	defer s.bufs.Put(mp)
	n, err := s.takeOver(ms), error(nil)
	if n == 0 {
		n, err = s.q.Take(ctx, s.cfg.PollInterval, ms)
	}
	if n == 0 {
		if err == nil && fatal != nil {
			return 0, fatal
		}
		if err == nil && s.cfg.StopAtEnd {
			return 0, s.atEnd(ctx)
		}
		return 0, err
	}
	batch := make([]natsjs.Msg, n)
	copy(batch, ms[:n])
	clear(ms[:n])
	for i, m := range batch {
		buf[i] = vertex.Message[[]byte]{}
		natsmsg.ToMessage(m.Subject(), m.Headers(), m.Data(), s.cfg.KeyTokens, &buf[i])
		md, err := m.Metadata()
		if err != nil {
			// Not a JetStream delivery: nats.go hands the source only
			// those.
			buf[i].ID = m.Subject()
			continue
		}
		// One allocation, the string's: the ID is made per message.
		var idb [64]byte
		id := append(append(idb[:0], md.Stream...), '/')
		buf[i].ID = string(strconv.AppendUint(id, md.Sequence.Stream, 10))
		if buf[i].EventTime.IsZero() {
			buf[i].EventTime = md.Timestamp
		}
		if md.NumDelivered > 1 {
			s.redelivered.Add(1)
		}
	}
	s.mu.Lock()
	closed = s.closed
	if !closed {
		s.flying[buf[0].ID] = append(s.flying[buf[0].ID], batch)
	}
	s.mu.Unlock()
	if closed {
		// Closed while this read waited: give the batch back, as Close
		// did what it found.
		for _, m := range batch {
			m.Nak()
		}
		clear(buf[:n])
		return 0, ErrClosed
	}
	return n, nil
}

// takeOver moves up to len(ms) of the messages the keeper took out of the
// queue into ms, and returns how many.
func (s *Source) takeOver(ms []natsjs.Msg) int {
	if !s.hasOver.Load() {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := copy(ms, s.over)
	clear(s.over[:n])
	if s.over = s.over[n:]; len(s.over) == 0 {
		s.over = nil
		s.hasOver.Store(false)
	}
	return n
}

// atEnd reports io.EOF when the consumer has nothing to deliver and
// nothing waiting for acknowledgement, nil otherwise (or when the server
// cannot say: the next idle read asks again).
func (s *Source) atEnd(ctx context.Context) error {
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := s.cons.Info(ictx)
	if err != nil || info.NumPending > 0 || info.NumAckPending > 0 || len(s.q.C) > 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.flying) > 0 || len(s.over) > 0 {
		return nil
	}
	s.ended = true
	return io.EOF
}

// Ack acknowledges the batch msgs, as Read returned it, to JetStream:
// the pipeline calls it once the batch is written downstream. An
// acknowledgement is sent without waiting for the server's answer; one
// that is lost makes the server deliver the message again after AckWait
// (at least once). A batch the source did not hand out, or acknowledged
// already, is ErrUnknownAck.
func (s *Source) Ack(_ context.Context, msgs []vertex.Message[[]byte]) error {
	if len(msgs) == 0 {
		return nil
	}
	id := msgs[0].ID
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	var batch []natsjs.Msg
	list := s.flying[id]
	for i, b := range list {
		if len(b) == len(msgs) {
			batch = b
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	switch {
	case batch == nil:
	case len(list) == 0:
		delete(s.flying, id)
	default:
		s.flying[id] = list
	}
	s.mu.Unlock()
	if batch == nil {
		return fmt.Errorf("%w: a batch of %d from ID %q", ErrUnknownAck, len(msgs), id)
	}
	var first error
	for _, m := range batch {
		if err := m.Ack(); err != nil && first == nil && !errors.Is(err, natsjs.ErrMsgAlreadyAckd) {
			first = err
		}
	}
	if first != nil {
		// Sent as far as the client could: the rest are delivered again
		// after AckWait. Retrying the batch would find it gone.
		s.consumeErrs.Failure(fmt.Errorf("acknowledge: %w", first), zap.String("stream", s.cfg.Stream), zap.String("consumer", s.cfg.Durable))
	}
	return nil
}

// Redelivered returns how many messages the source read that the server
// had delivered before (to this consumer, in this process or an earlier
// one): the repetition a crash, a lost acknowledgement or an AckWait that
// passed causes.
func (s *Source) Redelivered() int64 { return s.redelivered.Load() }

// DefaultRetry is vertex.RemoteRetry: a source vertex on it retries a
// failed Read (ErrConsume) until the pipeline stops, unless its options
// set a policy (vertex.Retry), which wins (see [vertex.RetryDefaulter]).
// A lost connection is no Read error: nats.go reconnects and pulls again
// by itself, and the source logs its consume errors at most once a
// second.
func (s *Source) DefaultRetry() vertex.RetryPolicy { return vertex.RemoteRetry }

// Close stops consuming and gives back, unacknowledged (a Nak, so the
// server delivers them again at once rather than after AckWait), the
// messages fetched and not acknowledged. It is idempotent.
func (s *Source) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	flying, over := s.flying, s.over
	s.flying, s.over = nil, nil
	s.mu.Unlock()
	s.keeper.stop()
	s.q.Close() // a callback waiting for room returns
	s.cc.Stop()
	select {
	case <-s.cc.Closed():
	case <-time.After(5 * time.Second):
	}
	for _, list := range flying {
		for _, b := range list {
			for _, m := range b {
				m.Nak()
			}
		}
	}
	for _, m := range over {
		m.Nak()
	}
	for {
		select {
		case m := <-s.q.C:
			m.Nak()
		default:
			return nil
		}
	}
}
