package jsstorage

import (
	"context"
	"time"

	"github.com/runnel-dev/runnel/isb/jetstream"
)

// request runs f, each attempt with a fresh RequestTimeout, and runs it
// again while it fails for a reason that heals (jetstream.Transient), with
// a backoff from 10 ms doubling to 500 ms, until RetryTimeout has passed
// since the first attempt. It returns f's last error. The state bucket's
// calls have no context of their own (vertex.StateStore), so RetryTimeout
// is what bounds them; the buffers' backends retry the same failures for
// their own RetryTimeout, so a server restart that the buffers ride out
// does not fail a run through its state bucket.
func (s *Storage) request(f func(ctx context.Context) error) error {
	deadline := time.Now().Add(s.cfg.retryTimeout)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout)
		err := f(ctx)
		cancel()
		if err == nil || !jetstream.Transient(err) || time.Now().Add(wait).After(deadline) {
			return err
		}
		time.Sleep(wait)
	}
}
