package isb

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"time"
)

// PushConsumer runs a handler over a consumer group with N goroutines.
//
// Each goroutine owns one pull consumer of the group (so Consumers(n)
// splits the partitions as PullConsumers does) and calls the handler with
// one batch at a time; handlers of different goroutines run concurrently.
// The handler's ctx is cancelled by Stop. The batch is valid only during
// the call.
//
// Auto commit (the default): a batch is committed when its goroutine pulls
// again, which it does as soon as the handler returns (also when Stop was
// called meanwhile), whatever the handler returned: a handler error goes to
// the OnError callback and the batch is skipped. The one exception is a
// handler that fails after Stop cancelled its ctx: that batch is left
// uncommitted, to be delivered again.
//
// ManualCommit: a batch is committed (CommitTo its end) when the handler
// returns nil. An error goes to OnError and the same batch is retried after
// a backoff that starts at the Backoff min and doubles up to its max; Stop
// interrupts the wait. Delivery is at least once: a batch whose handler
// did not succeed before Stop is delivered again to the group later.
//
// A handler that panics fails with a *PanicError carrying the panic value
// and stack, as if it had returned it. A damaged record (a read error
// matching ErrCorrupt) is reported to OnError with its partition and
// offset, then stepped past with Skip (counted by Skipped): it can never be
// delivered, and retrying it would stall its partition forever.
type PushConsumer[T any] struct {
	consumers []*PullConsumer[T]
	handler   func(ctx context.Context, b Batch[T]) error
	cfg       consumerConfig
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	stopOnce  sync.Once
	stopErr   error
}

// Subscribe starts a push consumer group: handler is called with batches by
// Consumers(n) goroutines until Stop. See PushConsumer for the commit and
// retry contract. The group is in use until Stop returns.
func (t *Topic[T]) Subscribe(group string, handler func(ctx context.Context, b Batch[T]) error, opts ...ConsumerOption) (*PushConsumer[T], error) {
	if handler == nil {
		return nil, &OptionError{Option: "handler", Value: "nil", Reason: "must not be nil"}
	}
	cfg, err := newConsumerConfig(t.cfg.partitions, opts)
	if err != nil {
		return nil, err
	}
	cs, err := t.PullConsumers(group, cfg.consumers, opts...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	pc := &PushConsumer[T]{consumers: cs, handler: handler, cfg: cfg, cancel: cancel}
	pc.wg.Add(len(cs))
	for _, c := range cs {
		go pc.run(ctx, c)
	}
	return pc, nil
}

// run is one goroutine's loop: pull, handle, commit, until ctx is
// cancelled or the consumer or topic closes.
func (pc *PushConsumer[T]) run(ctx context.Context, c *PullConsumer[T]) {
	defer pc.wg.Done()
	backoff := pc.cfg.minBackoff
	for {
		b, err := c.Pull(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, ErrClosed) {
				return
			}
			partition, offset := -1, int64(-1)
			var re *ReadError
			if errors.As(err, &re) {
				partition, offset = re.Partition, re.Offset
			}
			pc.report(partition, offset, err)
			if re != nil && errors.Is(err, ErrCorrupt) {
				// A damaged record never reads: retrying would stall
				// the partition forever. Step past it and go on.
				if _, err := c.Skip(re.Partition); err == nil {
					continue
				}
			}
			// A storage failure: try again later rather than spin on it.
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, pc.cfg.maxBackoff)
			continue
		}
		backoff = pc.cfg.minBackoff
		if !pc.cfg.manualCommit {
			if err := pc.handle(ctx, b); err != nil {
				pc.report(b.Partition, b.Offset, err)
				if ctx.Err() != nil {
					return // failed as Stop cancelled it: leave it uncommitted
				}
			}
			continue // the next Pull commits the batch, even after Stop
		}
		if !pc.handleManual(ctx, c, b) {
			return
		}
	}
}

// handleManual calls the handler on b until it succeeds, then commits b.
// It reports false when Stop interrupted it.
func (pc *PushConsumer[T]) handleManual(ctx context.Context, c *PullConsumer[T], b Batch[T]) bool {
	backoff := pc.cfg.minBackoff
	for {
		err := pc.handle(ctx, b)
		if err == nil {
			if err := c.CommitTo(b.Partition, b.End()); err != nil {
				pc.report(b.Partition, b.Offset, err)
				return ctx.Err() == nil && !errors.Is(err, ErrClosed)
			}
			return true
		}
		pc.report(b.Partition, b.Offset, err)
		if !sleep(ctx, backoff) {
			return false
		}
		backoff = min(2*backoff, pc.cfg.maxBackoff)
	}
}

// handle calls the handler, turning a panic into a *PanicError with the
// panic value and stack: a failing handler, not a dead process.
func (pc *PushConsumer[T]) handle(ctx context.Context, b Batch[T]) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return pc.handler(ctx, b)
}

// Skipped returns how many damaged records the push consumer stepped past
// (each was reported to OnError first).
func (pc *PushConsumer[T]) Skipped() int64 {
	var n int64
	for _, c := range pc.consumers {
		n += c.Skipped()
	}
	return n
}

func (pc *PushConsumer[T]) report(partition int, offset int64, err error) {
	if pc.cfg.onError != nil {
		pc.cfg.onError(partition, offset, err)
	}
}

// sleep waits d or until ctx ends, and reports whether it waited d.
func sleep(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Stop stops pulling, waits for the handlers in flight and releases the
// group. It is idempotent and safe to call from several goroutines; every
// call returns after the goroutines have ended. A handler must not call
// Stop: Stop would wait for that very handler.
func (pc *PushConsumer[T]) Stop() error {
	pc.stopOnce.Do(func() {
		pc.cancel()  // ends Pulls, backoff waits and the handlers' ctx
		pc.wg.Wait() // the handlers in flight return
		var errs []error
		for _, c := range pc.consumers {
			errs = append(errs, c.Close())
		}
		pc.stopErr = errors.Join(errs...)
	})
	return pc.stopErr
}
