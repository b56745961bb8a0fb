package forwarder

import (
	"context"
	"fmt"
	"time"

	"github.com/runnel-dev/runnel/vertex"
)

// retryAfter retries f after a first attempt failed with err, until f
// succeeds, the policy's attempts are used up, or ctx ends. It returns the
// attempts made in all; on exhaustion the error wraps vertex.ErrRetriesExhausted
// and the last error. Every retry is counted. The first attempt is the
// caller's, so the common path (success) costs no closure call.
func retryAfter[R any](ctx context.Context, p vertex.RetryPolicy, c *Counters, err error, f func() (R, error)) (R, int, error) {
	var zero R
	for attempt := 1; ; attempt++ {
		if ctx.Err() != nil {
			return zero, attempt, ctx.Err()
		}
		if attempt >= p.MaxAttempts {
			return zero, attempt, fmt.Errorf("%w: %w", vertex.ErrRetriesExhausted, err)
		}
		c.retried.Add(1)
		c.NoteError(err)
		if serr := sleep(ctx, p.Backoff(attempt)); serr != nil {
			return zero, attempt, serr
		}
		r, e := f()
		if e == nil {
			return r, attempt + 1, nil
		}
		err = e
	}
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
