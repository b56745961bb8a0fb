package watermark

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// The publisher's goroutine puts what Publish left in the slots. Its
// bounds: each round of puts, and each heartbeat, waits for the store at
// most putTimeout; a round that fails is retried after a pause growing from
// retryMin to retryMax while the store keeps failing, so a store that is
// down costs a put attempt now and then, and WMBs published meanwhile
// replace the ones waiting (the slot holds one per partition).
const (
	putTimeout = time.Second
	retryMin   = 20 * time.Millisecond
	retryMax   = time.Second
)

// run is the publisher's goroutine. Its cadence uses real timers; what it
// does (heartbeat, drain) uses the configured clock, and tests call those
// directly.
//
// A throttled WMB is published by a timer armed when it is kept, not by a
// ticker: a ticker at a tiny Throttle (time.Nanosecond, to publish every
// advance) kept a core busy flushing nothing. Now the goroutine sleeps
// between heartbeats unless a WMB waits.
func (p *Publisher) run(ctx context.Context) {
	hb := time.NewTicker(p.cfg.interval)
	defer hb.Stop()
	flush := stoppedTimer()
	defer flush.Stop()
	retry := stoppedTimer()
	defer retry.Stop()
	wmbs := failureLog{log: p.cfg.log, what: "publishing WMBs", processor: p.cfg.processor}
	beats := failureLog{log: p.cfg.log, what: "heartbeat", processor: p.cfg.processor}
	backoff := retryMin
	drain := func(all bool) {
		rctx, cancel := context.WithTimeout(ctx, putTimeout)
		err := p.drain(rctx, all, true)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			wmbs.ok()
			backoff = retryMin
			return
		}
		wmbs.failed(err)
		retry.Reset(backoff)
		backoff = min(2*backoff, retryMax)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-hb.C:
			hctx, cancel := context.WithTimeout(ctx, putTimeout)
			err := p.heartbeat(hctx)
			cancel()
			switch {
			case ctx.Err() != nil:
			case err != nil:
				beats.failed(err)
			default:
				beats.ok()
			}
		case <-p.due:
			drain(false)
		case <-retry.C:
			drain(false)
		case <-p.kept:
			flush.Reset(p.cfg.throttle)
		case <-flush.C:
			// Cleared before the flush: a WMB kept from here on arms the
			// timer again (at worst it is also in this flush).
			p.armed.Store(false)
			drain(true)
		}
	}
}

func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

// heartbeat puts the processor's heartbeat into every edge's bucket.
func (p *Publisher) heartbeat(ctx context.Context) error {
	v := encodeHeartbeat(p.cfg.clock())
	key := heartbeatKey(p.cfg.processor)
	var errs []error
	for _, e := range p.order {
		if err := p.store.Put(ctx, e.bucket, key, v); err != nil {
			errs = append(errs, fmt.Errorf("watermark: heartbeat of %q into bucket %q: %w", p.cfg.processor, e.bucket, err))
		}
	}
	return errors.Join(errs...)
}

// Flush puts every pending WMB now, the ones kept by the throttle too, and
// returns when they are in the store or ctx ended (the failures, joined:
// those WMBs stay pending). It waits for a round of the goroutine that is
// under way, so after Flush returns nil everything published before it is
// in the store.
func (p *Publisher) Flush(ctx context.Context) error {
	return retryUntil(ctx, func(ctx context.Context) error { return p.drain(ctx, true, false) })
}

// attemptTimeout bounds one attempt of retryUntil: a put or delete made
// while the connection was down, whose answer was lost in the reconnect,
// would otherwise wait out the caller's whole context (TestStopWaitsForFinalWMB
// failed so, under load, with a minute to spare).
const attemptTimeout = 5 * time.Second

// retryUntil calls f with a context of at most attemptTimeout until it
// succeeds or ctx ends, pausing from retryMin to retryMax between
// attempts; it returns the last error.
func retryUntil(ctx context.Context, f func(context.Context) error) error {
	backoff := retryMin
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := f(actx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff = min(2*backoff, retryMax)
	}
}

// drain puts the pending WMBs: every one when all is set, else only the
// due ones (not kept by the throttle). With stopAtFirst it gives up at the
// first failure, leaving the rest for the retry: a store that failed one
// put is likely down.
func (p *Publisher) drain(ctx context.Context, all, stopAtFirst bool) error {
	p.putMu.Lock()
	defer p.putMu.Unlock()
	var errs []error
	for _, e := range p.order {
		for i := range e.parts {
			if err := p.putSlot(ctx, e, &e.parts[i], all); err != nil {
				if stopAtFirst {
					return err
				}
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// putSlot puts s.latest if it is pending (and due, unless all). The slot
// is unlocked during the put, so Publish goes on meanwhile; a WMB accepted
// during the put stays pending for the next round. p.putMu must be held.
func (p *Publisher) putSlot(ctx context.Context, e *pubEdge, s *pubPartition, all bool) error {
	s.mu.Lock()
	if !s.pending || (!all && !s.due) {
		s.mu.Unlock()
		return nil
	}
	w, gen := s.latest, s.gen
	s.due = false
	s.publishedAt, s.idle = p.cfg.clock(), w.Idle
	s.mu.Unlock()

	v, err := w.AppendBinary(s.buf[:0])
	if err != nil {
		return err // unreachable: publish checked every field
	}
	s.buf = v
	err = p.store.Put(ctx, e.bucket, s.key, v)

	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.due = true // retried by the next round, throttle or not
		return fmt.Errorf("watermark: publishing %v of %q into bucket %q: %w", w, p.cfg.processor, e.bucket, err)
	}
	if s.gen == gen {
		s.pending = false
	}
	return nil
}

// failureLog reports a background put that keeps failing once, when it
// starts failing, and once when it succeeds again, rather than on every
// retry while the store is down.
type failureLog struct {
	log       *zap.Logger
	what      string
	processor string
	failing   bool
	since     time.Time
}

func (f *failureLog) failed(err error) {
	if f.failing {
		return
	}
	f.failing, f.since = true, time.Now()
	f.log.Warn("watermark: "+f.what+" failing; retrying", zap.String("processor", f.processor), zap.Error(err))
}

func (f *failureLog) ok() {
	if !f.failing {
		return
	}
	f.failing = false
	f.log.Info("watermark: "+f.what+" succeeded again", zap.String("processor", f.processor),
		zap.Duration("failed_for", time.Since(f.since)))
}
