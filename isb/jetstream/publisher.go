package jetstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/semaphore"
)

// Asynchronous publishes with their acknowledgements.
//
// A JetStream publish is a core publish with a reply subject, answered on
// it by the stream with {"stream":..,"seq":..} (or an error). The
// publisher sends a round of messages with reply subjects
// {inbox}.{round}.{index} on one wildcard subscription and waits for the
// round as a whole: per message it costs a reply subject and a slot of
// the MaxOutstanding semaphore, where nats.go's PublishMsgAsync costs a
// future, its channels, a map entry and a timer per message (the topic's
// produce was faster without them: docs/benchmarks.md). A round not answered within
// AckTimeout, or cut by a reconnect, reports its unanswered messages as
// failed; the caller sends them again (same Nats-Msg-Id) in a new round.

// pubResult is the answer to one message of a round.
type pubResult struct {
	seq uint64
	err error
}

// round is one call of publish: its messages' answers.
type round struct {
	res  []pubResult
	sent []bool // holds a slot until answered (guarded by publisher.mu)
	got  []bool // answered, or failed
	left int
	done chan struct{} // closed when every message is answered
}

type publisher struct {
	nc     *nats.Conn
	prefix string // {inbox}.
	sub    *nats.Subscription
	slots  *semaphore.Weighted
	status chan nats.Status // reconnects: rounds in flight fail at once

	mu     sync.Mutex
	next   uint64
	rounds map[uint64]*round
}

func newPublisher(nc *nats.Conn, maxOutstanding int) (*publisher, error) {
	p := &publisher{nc: nc, prefix: nc.NewInbox() + ".", slots: semaphore.NewWeighted(int64(maxOutstanding)),
		rounds: make(map[uint64]*round)}
	sub, err := nc.Subscribe(p.prefix+"*.*", p.handle)
	if err != nil {
		return nil, fmt.Errorf("jetstream: subscribe for publish acknowledgements: %w", err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil { // bounded by MaxOutstanding
		sub.Unsubscribe()
		return nil, err
	}
	p.sub = sub
	p.status = nc.StatusChanged(nats.RECONNECTING)
	return p, nil
}

// watchReconnects fails the rounds in flight when the connection drops:
// what was sent may be lost, and what is sent again now waits in the
// client's reconnect buffer until the server is back. It returns when
// close removes the status listener.
func (p *publisher) watchReconnects() {
	for range p.status {
		p.mu.Lock()
		for id, r := range p.rounds {
			p.failLocked(id, r, nats.ErrDisconnected)
		}
		p.mu.Unlock()
	}
}

func (p *publisher) close() error {
	p.nc.RemoveStatusListener(p.status)
	if err := p.sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		return err
	}
	return nil
}

// failLocked ends round id: every message not answered fails with err,
// and those sent give their slot back. p.mu is held.
func (p *publisher) failLocked(id uint64, r *round, err error) {
	delete(p.rounds, id)
	for i := range r.res {
		if !r.got[i] {
			r.got[i] = true
			r.res[i].err = err
			if r.sent[i] {
				p.slots.Release(1)
			}
		}
	}
	r.left = 0
	close(r.done)
}

// handle runs on the subscription's goroutine: {prefix}{round}.{index}.
func (p *publisher) handle(m *nats.Msg) {
	rs, is, ok := strings.Cut(m.Subject[len(p.prefix):], ".")
	if !ok {
		return
	}
	id, err1 := strconv.ParseUint(rs, 36, 64)
	i, err2 := strconv.Atoi(is)
	if err1 != nil || err2 != nil {
		return
	}
	res := parseAck(m)
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.rounds[id]
	if r == nil || i < 0 || i >= len(r.res) || r.got[i] {
		return // a round that ended already, or a repeated answer
	}
	r.got[i], r.res[i] = true, res
	p.slots.Release(1)
	if r.left--; r.left == 0 {
		delete(p.rounds, id)
		close(r.done)
	}
}

// ackSeq is where the sequence starts in a publish acknowledgement.
var ackSeq = []byte(`"seq":`)

// parseAck reads an acknowledgement: the sequence of a stored (or
// duplicate) message, or the error.
func parseAck(m *nats.Msg) pubResult {
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		return pubResult{err: nats.ErrNoResponders}
	}
	if !bytes.Contains(m.Data, []byte(`"error"`)) {
		if i := bytes.Index(m.Data, ackSeq); i >= 0 {
			rest := m.Data[i+len(ackSeq):]
			j := 0
			for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
				j++
			}
			if seq, err := strconv.ParseUint(string(rest[:j]), 10, 64); err == nil && seq > 0 {
				return pubResult{seq: seq}
			}
		}
	}
	var ack struct {
		Seq   uint64           `json:"seq"`
		Error *natsjs.APIError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &ack); err != nil {
		return pubResult{err: fmt.Errorf("%w: %q", natsjs.ErrInvalidJSAck, m.Data)}
	}
	if ack.Error != nil {
		return pubResult{err: ack.Error}
	}
	if ack.Seq == 0 {
		return pubResult{err: fmt.Errorf("%w: %q", natsjs.ErrInvalidJSAck, m.Data)}
	}
	return pubResult{seq: ack.Seq}
}

// publish sends msgs (their Reply is overwritten) and waits for their
// answers, at most AckTimeout after the last was sent, or until ctx ends.
// A message the client could not send fails with that error, and so do
// the messages after it, unsent: what is sent keeps its order.
func (p *publisher) publish(ctx context.Context, msgs []*nats.Msg, ackTimeout time.Duration) ([]pubResult, error) {
	id, r := p.send(ctx, msgs)
	return p.await(ctx, id, r, ackTimeout)
}

// send sends msgs as a new round, waiting only for slots of the
// MaxOutstanding semaphore (answers to earlier rounds free them), and
// returns the round for await.
func (p *publisher) send(ctx context.Context, msgs []*nats.Msg) (uint64, *round) {
	n := len(msgs)
	r := &round{res: make([]pubResult, n), sent: make([]bool, n), got: make([]bool, n), left: n, done: make(chan struct{})}
	p.mu.Lock()
	p.next++
	id := p.next
	p.rounds[id] = r
	p.mu.Unlock()
	base := p.prefix + strconv.FormatUint(id, 36) + "."
	for i, m := range msgs {
		if err := p.slots.Acquire(ctx, 1); err != nil {
			p.end(id, r, err)
			break
		}
		p.mu.Lock()
		if p.rounds[id] != r { // failed by a reconnect meanwhile
			p.mu.Unlock()
			p.slots.Release(1)
			break
		}
		r.sent[i] = true
		p.mu.Unlock()
		m.Reply = base + strconv.Itoa(i)
		if err := p.nc.PublishMsg(m); err != nil {
			p.end(id, r, err)
			break
		}
	}
	return id, r
}

// await waits for the answers of round id, at most ackTimeout from now,
// or until ctx ends; what is unanswered then fails.
func (p *publisher) await(ctx context.Context, id uint64, r *round, ackTimeout time.Duration) ([]pubResult, error) {
	timer := time.NewTimer(ackTimeout)
	defer timer.Stop()
	var err error
	select {
	case <-r.done:
		return r.res, ctx.Err() // the round may have ended because ctx did
	case <-timer.C:
		err = natsjs.ErrAsyncPublishTimeout
	case <-ctx.Done():
		err = ctx.Err()
	}
	p.end(id, r, err)
	return r.res, ctx.Err()
}

// end fails what round id has not been answered, unless it ended already.
func (p *publisher) end(id uint64, r *round, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rounds[id] == r {
		p.failLocked(id, r, err)
	}
}
