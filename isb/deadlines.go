package isb

import (
	"time"

	"go.uber.org/zap"
)

// upkeep is a consumer's ack-deadline goroutine: on storage that
// redelivers what is not committed within a deadline (AckDeadlines) it
// keeps the consumer's delivered, uncommitted items in progress. The
// consumer owns it: Close stops it and waits for it.
type upkeep struct {
	stopc  chan struct{} // closed by stop
	exited chan struct{} // closed by the goroutine when it returns
}

// startUpkeep starts c's upkeep when storage of one of its partitions has
// ack deadlines, reporting every half of the shortest deadline.
func (c *PullConsumer[T]) startUpkeep() {
	var every time.Duration
	for j := range c.next {
		if d, ok := c.topic.parts[c.first+j].log.(AckDeadlines); ok {
			if w := d.AckWait() / 2; w > 0 && (every == 0 || w < every) {
				every = w
			}
		}
	}
	if every == 0 {
		return
	}
	u := &upkeep{stopc: make(chan struct{}), exited: make(chan struct{})}
	c.upkeep = u
	go func() {
		defer close(u.exited)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-u.stopc:
				return
			case <-c.topic.done:
				return
			case <-t.C:
			}
			c.keepInProgress()
		}
	}()
}

// stop stops the upkeep and waits for it; a nil upkeep does nothing.
func (u *upkeep) stop() {
	if u == nil {
		return
	}
	close(u.stopc)
	<-u.exited
}

// keepInProgress tells storage with deadlines that each partition's
// delivered, uncommitted range is still in progress. It holds mu, as a
// commit does, so storage is open and the range is current. A failure is
// logged and tried again at the next tick: the worst outcome is a
// redelivery, which at-least-once delivery allows.
func (c *PullConsumer[T]) keepInProgress() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() || c.topic.closed.Load() {
		return
	}
	for j := range c.next {
		from, to := c.committed[j], c.next[j]
		d, ok := c.topic.parts[c.first+j].log.(AckDeadlines)
		if !ok || from >= to {
			continue
		}
		if err := d.InProgress(c.group.name, from, to); err != nil {
			c.cfg.log.Warn("isb: could not keep delivered items in progress",
				zap.String("topic", c.topic.name), zap.String("group", c.group.name),
				zap.Int("partition", c.first+j), zap.Int64("from", from), zap.Int64("to", to), zap.Error(err))
		}
	}
}
