package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/internal/ratelog"
)

// committer is the source's goroutine that commits the group's offsets:
// woken by an Ack that moved a partition's acknowledged prefix, it
// commits every partition whose prefix is past its last commit, then
// waits at least the commit interval before the next. A commit is a round
// trip to the group's coordinator; made on the Ack's path it would stall
// the pipeline once a batch, and this way acknowledgements that come
// during one commit are covered by the next.
type committer struct {
	src   *Source
	wakeC chan struct{} // one pending wake-up at most
	ctx   context.Context
	halt  context.CancelFunc
	done  chan struct{}
	fails ratelog.Log
}

// start starts the goroutine.
func (c *committer) start(s *Source) {
	c.src, c.wakeC, c.done = s, make(chan struct{}, 1), make(chan struct{})
	c.fails = ratelog.Log{Log: s.cfg.Logger, Msg: "kafka source: commit failed; retried at the next commit"}
	c.ctx, c.halt = context.WithCancel(context.Background())
	go c.loop()
}

// wake asks for a commit.
func (c *committer) wake() {
	select {
	case c.wakeC <- struct{}{}:
	default:
	}
}

// stop ends the goroutine, cancelling a commit in flight, and waits for
// it.
func (c *committer) stop() {
	c.halt()
	<-c.done
}

func (c *committer) loop() {
	defer close(c.done)
	pause := time.NewTimer(0)
	defer pause.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.wakeC:
		}
		ctx, cancel := context.WithTimeout(c.ctx, commitTimeout)
		err := c.src.commitDue(ctx)
		cancel()
		if err != nil && c.ctx.Err() == nil {
			c.fails.Failure(err, zap.String("group", c.src.cfg.Group))
			c.wake() // retried after the pause
		}
		pause.Reset(c.src.cfg.CommitInterval)
		select {
		case <-c.ctx.Done():
			return
		case <-pause.C:
		}
	}
}

// commitDue commits every partition whose acknowledged prefix is past its
// last commit, and records the commit once the coordinator stored it.
func (s *Source) commitDue(ctx context.Context) error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	offsets := map[string]map[int32]kgo.EpochOffset{}
	s.mu.Lock()
	for tp, pt := range s.parts {
		if eo, ok := pt.due(); ok {
			addOffset(offsets, tp, eo)
		}
	}
	s.mu.Unlock()
	if len(offsets) == 0 {
		return nil
	}
	if err := s.commitSync(ctx, offsets); err != nil {
		return err
	}
	// Under commitMu no revocation ran since the offsets were taken: every
	// partition in them is the one they were taken from.
	s.mu.Lock()
	defer s.mu.Unlock()
	for topic, ps := range offsets {
		for p, eo := range ps {
			if pt := s.parts[topicPartition{topic, p}]; pt != nil {
				pt.committed = max(pt.committed, eo.Offset)
			}
		}
	}
	return nil
}

// commitSync commits offsets and waits for the answer, a failed partition
// included.
func (s *Source) commitSync(ctx context.Context, offsets map[string]map[int32]kgo.EpochOffset) error {
	var err error
	s.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, cerr error) {
		if cerr != nil {
			err = cerr
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if perr := kerr.ErrorForCode(p.ErrorCode); perr != nil && err == nil {
					err = fmt.Errorf("topic %q partition %d: %w", t.Topic, p.Partition, perr)
				}
			}
		}
	})
	return err
}

// addOffset adds tp's offset to a commit.
func addOffset(offsets map[string]map[int32]kgo.EpochOffset, tp topicPartition, eo kgo.EpochOffset) {
	ps := offsets[tp.topic]
	if ps == nil {
		ps = map[int32]kgo.EpochOffset{}
		offsets[tp.topic] = ps
	}
	ps[tp.partition] = eo
}
