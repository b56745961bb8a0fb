package nats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/internal/natsmsg"
	"github.com/runnel-dev/runnel/internal/ratelog"
	"github.com/runnel-dev/runnel/vertex"
)

// Source is a [vertex.Source] of the messages published to a NATS
// subject; [NewSource] makes one, and the package doc says what it
// delivers (at most once). Its replicas (vertex.Replicas) share one
// subscription.
type Source struct {
	cfg   sourceConfig
	sub   *nats.Subscription
	q     *natsmsg.Queue[*nats.Msg]
	ids   string // the prefix of the IDs the source makes
	seq   atomic.Uint64
	bufs  sync.Pool // of *[]*nats.Msg, a read's
	drops ratelog.Log

	dropped atomic.Int64
	closed  atomic.Bool
}

// NewSource validates cfg and subscribes to cfg.Subject (in cfg.Queue's
// group when set), waiting up to 5s for the server to confirm it; messages
// published once it has returned are the source's. An
// invalid field of cfg is an *OptionError naming it (errors.Is(err,
// pipeline.ErrInvalidOption)); a subscription the server or client
// refuses is ErrSubscribe. Close unsubscribes; the pipeline calls it
// when it stops.
func NewSource(cfg SourceConfig) (*Source, error) {
	c, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	var b [8]byte
	rand.Read(b[:])
	s := &Source{cfg: c, q: natsmsg.NewQueue[*nats.Msg](c.Pending), ids: hex.EncodeToString(b[:]) + "-"}
	s.drops = ratelog.Log{Log: c.Logger, Msg: "nats source: pending queue full, messages dropped"}
	// A channel subscription: nats.go's reader puts each message straight
	// into the queue, or, when it is full, drops it and counts it in the
	// subscription (Dropped). A callback would add a goroutine hop per
	// message, and blocking in it would hold up the connection's delivery
	// to this subscription until nats.go dropped messages itself.
	if c.Queue != "" {
		s.sub, err = c.Conn.ChanQueueSubscribe(c.Subject, c.Queue, s.q.C)
	} else {
		s.sub, err = c.Conn.ChanSubscribe(c.Subject, s.q.C)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: subject %q: %w", ErrSubscribe, c.Subject, err)
	}
	// The subscription reaches the server asynchronously; a flush waits
	// until the server has it, so what is published once NewSource has
	// returned is the source's. A connection that is down subscribes when
	// it is back, and the source has what is published from then on.
	if err := c.Conn.FlushTimeout(subscribeTimeout); err != nil && c.Conn.IsConnected() {
		s.sub.Unsubscribe()
		return nil, fmt.Errorf("%w: subject %q: the server did not confirm: %w", ErrSubscribe, c.Subject, err)
	}
	return s, nil
}

// subscribeTimeout bounds NewSource's wait for the server to have the
// subscription.
const subscribeTimeout = 5 * time.Second

// noteDrops logs, rate-limited, the drops the subscription counted since
// the last call.
func (s *Source) noteDrops() {
	n, err := s.sub.Dropped()
	if err != nil {
		return // closed: Dropped keeps the last count
	}
	for {
		old := s.dropped.Load()
		if int64(n) <= old {
			return
		}
		if s.dropped.CompareAndSwap(old, int64(n)) {
			break
		}
	}
	s.drops.Failure(fmt.Errorf("%d messages dropped since the source started", n),
		zap.String("subject", s.cfg.Subject), zap.Int("pending", s.cfg.Pending))
}

// Dropped returns how many messages the source dropped because its
// pending queue was full (see the package doc).
func (s *Source) Dropped() int64 {
	s.noteDrops()
	return s.dropped.Load()
}

// Read returns up to max messages, or an empty batch when none came
// within the poll interval.
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
	if s.closed.Load() {
		return 0, ErrClosed
	}
	mp, _ := s.bufs.Get().(*[]*nats.Msg)
	if mp == nil || cap(*mp) < len(buf) {
		ms := make([]*nats.Msg, len(buf))
		mp = &ms
	}
	ms := (*mp)[:len(buf)]
	n, err := s.q.Take(ctx, s.cfg.PollInterval, ms)
	if n == 0 || n == len(ms) {
		// Idle, or a full batch: when the queue may have been full.
		s.noteDrops()
	}
	for i, m := range ms[:n] {
		buf[i] = vertex.Message[[]byte]{}
		natsmsg.ToMessage(m.Subject, m.Header, m.Data, s.cfg.KeyTokens, &buf[i])
		if id := m.Header.Get(natsmsg.MsgIDHeader); id != "" {
			buf[i].ID = id
		} else {
			// One allocation, the string's: the ID is made per message.
			var idb [48]byte
			buf[i].ID = string(strconv.AppendUint(append(idb[:0], s.ids...), s.seq.Add(1), 10))
		}
	}
	clear(ms[:n])
	s.bufs.Put(mp)
	return n, err
}

// DefaultRetry is vertex.RemoteRetry: a source vertex on it retries a
// failed Read until the pipeline stops, unless its options set a policy
// (vertex.Retry), which wins (see [vertex.RetryDefaulter]). The
// subscription itself survives a lost connection: nats.go subscribes
// again when it reconnects.
func (s *Source) DefaultRetry() vertex.RetryPolicy { return vertex.RemoteRetry }

// Close unsubscribes; the messages still queued are lost (at most once).
// It is idempotent.
func (s *Source) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.noteDrops()
	s.q.Close()
	if err := s.sub.Unsubscribe(); err != nil && s.cfg.Conn.IsConnected() {
		return fmt.Errorf("nats: source of %q: unsubscribe: %w", s.cfg.Subject, err)
	}
	return nil
}
