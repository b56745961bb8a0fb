package jetstream

import (
	"context"
	"errors"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/internal/ratelog"
)

// keeper is the source's goroutine that keeps the messages in flight in
// the pipeline from being delivered again: every AckWait/3 it tells the
// server that each is in progress, which restarts its AckWait. A message
// in flight longer than AckWait (a sink waiting out an outage, a slow
// reduce) would otherwise be delivered again behind the pipeline's back,
// and a pipeline slower than AckWait would deliver everything twice.
// Numaflow's JetStream buffers do the same, every AckWait/3 too: two
// chances before the wait runs out.
//
// Messages fetched and not yet read are kept the same way: a pipeline
// whose buffers are full behind a slow sink does not read, and the
// messages in the source's queue, and those nats.go holds of its pulls
// behind it, would wait past AckWait. Each tick moves what the queue
// holds to a list the keeper can go over (reads empty it first), and
// nats.go refills the queue from what it holds: a queue's worth
// (FetchBatch) more is kept at each tick. What nats.go holds beyond
// three queues' worth when the pipeline stalls can still wait past
// AckWait and be delivered again (a duplicate, with the same ID).
type keeper struct {
	src   *Source
	ctx   context.Context
	halt  context.CancelFunc
	done  chan struct{}
	fails ratelog.Log
}

func (k *keeper) start(s *Source) {
	k.src, k.done = s, make(chan struct{})
	k.fails = ratelog.Log{Log: s.cfg.Logger, Msg: "jetstream source: in-progress acknowledgement failed"}
	k.ctx, k.halt = context.WithCancel(context.Background())
	go k.loop()
}

func (k *keeper) stop() {
	k.halt()
	<-k.done
}

func (k *keeper) loop() {
	defer close(k.done)
	tick := time.NewTicker(k.src.ackWait / 3)
	defer tick.Stop()
	var held []natsjs.Msg
	for {
		select {
		case <-k.ctx.Done():
			return
		case <-tick.C:
		}
		held = held[:0]
		s := k.src
		s.mu.Lock()
		for _, list := range s.flying {
			for _, b := range list {
				held = append(held, b...)
			}
		}
		// The queue cannot be looked into: what it holds moves to over,
		// which reads empty first. nats.go refills the queue meanwhile
		// from what it holds of its pulls, so a pipeline that does not
		// read has everything fetched kept, a queue's worth more each
		// time, up to the consumer's MaxAckPending.
	drain:
		for {
			select {
			case m := <-s.q.C:
				s.over = append(s.over, m)
			default:
				break drain
			}
		}
		if len(s.over) > 0 {
			held = append(held, s.over...)
			s.hasOver.Store(true)
		}
		s.mu.Unlock()
		for _, m := range held {
			// An acknowledgement that came meanwhile makes this one
			// ErrMsgAlreadyAckd, or the server ignore it.
			if err := m.InProgress(); err != nil && k.ctx.Err() == nil && !errors.Is(err, natsjs.ErrMsgAlreadyAckd) {
				k.fails.Failure(err, zap.String("stream", s.cfg.Stream), zap.String("consumer", s.cfg.Durable))
			}
		}
		clear(held)
	}
}
