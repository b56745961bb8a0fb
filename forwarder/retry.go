package forwarder

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/vertex"
)

// retryAfter retries f after a first attempt failed with err, until f
// succeeds, the policy's attempts are used up, or ctx ends. It returns the
// attempts made in all; on exhaustion the error wraps vertex.ErrRetriesExhausted
// and the last error. Every retry is counted, and every failure logged
// through cfg.Failures as what failed. The first attempt is the caller's, so the common path
// (success) costs no closure call.
func retryAfter[R any](ctx context.Context, cfg Config, what string, err error, f func() (R, error)) (R, int, error) {
	var zero R
	p := cfg.Options.Retry
	for attempt := 1; ; attempt++ {
		if ctx.Err() != nil {
			return zero, attempt, ctx.Err()
		}
		if attempt >= p.MaxAttempts {
			return zero, attempt, fmt.Errorf("%w: %w", vertex.ErrRetriesExhausted, err)
		}
		cfg.Counters.retried.Add(1)
		cfg.Counters.NoteError(err)
		wait := backoff(p, attempt)
		cfg.Failures.failed(cfg.Logger, what+" failed, retrying", zap.Error(err), zap.Int("attempt", attempt), zap.Duration("backoff", wait))
		if serr := sleep(ctx, wait); serr != nil {
			return zero, attempt, serr
		}
		r, e := f()
		if e == nil {
			cfg.Failures.recovered(cfg.Logger, what+" succeeded after failures")
			return r, attempt + 1, nil
		}
		err = e
	}
}

// backoff is the wait after the given failed attempt: the policy's
// backoff, jittered.
func backoff(p vertex.RetryPolicy, attempt int) time.Duration {
	return jittered(p.Backoff(attempt), p.Jitter, rand.Float64())
}

// jittered moves d by (2r-1)*jitter of itself, for r in [0, 1): uniformly
// over [d*(1-jitter), d*(1+jitter)] when r is uniform.
func jittered(d time.Duration, jitter, r float64) time.Duration {
	if jitter == 0 || d <= 0 {
		return d
	}
	return time.Duration(float64(d) * (1 + jitter*(2*r-1)))
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
