package jskv

import (
	"context"
	"fmt"
	"iter"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/watermark"
)

// Watch implements [watermark.Store.Watch] on a KV watcher, creating the
// bucket if it does not exist. The watcher is started when the range loop
// starts and stopped (its subscription removed and its delivery goroutine
// finished) before the loop returns. See the package doc for failures.
func (s *Store) Watch(ctx context.Context, bucket string) iter.Seq2[watermark.Update, error] {
	return func(yield func(watermark.Update, error) bool) {
		if err := watermark.CheckBucket(bucket); err != nil {
			yield(watermark.Update{}, fmt.Errorf("jskv: %w", err))
			return
		}
		if ctx.Err() != nil {
			return
		}
		// The watcher unsubscribes itself when its context ends; a child
		// context makes that happen when the loop ends for any reason.
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		w, err := s.startWatcher(wctx, bucket)
		if err != nil {
			if ctx.Err() == nil {
				yield(watermark.Update{}, err)
			}
			return
		}
		defer stopWatcher(cancel, w)

		synced := false
		for {
			var e jetstream.KeyValueEntry
			var open bool
			select {
			case <-ctx.Done():
				return
			case e, open = <-w.Updates():
			}
			if ctx.Err() != nil {
				return
			}
			if !open {
				yield(watermark.Update{}, s.watchFailed(bucket))
				return
			}
			var u watermark.Update
			switch {
			case e == nil: // the watcher's marker: initial values done
				synced = true
				u = watermark.Update{Op: watermark.OpSynced}
			case e.Operation() == jetstream.KeyValuePut:
				u = watermark.Update{Op: watermark.OpPut, Key: e.Key(), Value: e.Value()}
				if u.Value == nil {
					u.Value = []byte{} // a put of nothing is a value
				}
			case !synced:
				continue // the marker of a key deleted before the watch
			default: // KeyValueDelete, KeyValuePurge
				u = watermark.Update{Op: watermark.OpDelete, Key: e.Key()}
			}
			if !yield(u, nil) {
				return
			}
		}
	}
}

func (s *Store) startWatcher(ctx context.Context, bucket string) (jetstream.KeyWatcher, error) {
	kv, err := s.bucket(ctx, bucket, true)
	if err != nil {
		return nil, err
	}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		s.forget(bucket, err)
		return nil, fmt.Errorf("%w: bucket %q: %w", ErrWatchFailed, bucket, err)
	}
	return w, nil
}

// stopWatcher ends w and waits until its delivery goroutine has finished:
// that goroutine may be blocked handing the watcher an entry, and closes
// the updates channel when it ends.
func stopWatcher(cancel context.CancelFunc, w jetstream.KeyWatcher) {
	// Step 1: unsubscribe. The cancelled context also unsubscribes, on a
	// goroutine of the NATS client; whichever comes first wins and the
	// other gets an error that means "already done".
	cancel()
	_ = w.Stop()
	// Step 2: drain, so a blocked delivery can finish and close the channel.
	for range w.Updates() {
	}
}

// watchFailed is the error of a watch whose subscription ended while its
// context had not: the connection closed, or the NATS client gave up
// recreating the consumer (it tells the connection's async error handler
// why).
func (s *Store) watchFailed(bucket string) error {
	nc := s.js.Conn()
	if nc.IsClosed() {
		if last := nc.LastError(); last != nil {
			return fmt.Errorf("%w: bucket %q: %w (last error: %w)", ErrWatchFailed, bucket, nats.ErrConnectionClosed, last)
		}
		return fmt.Errorf("%w: bucket %q: %w", ErrWatchFailed, bucket, nats.ErrConnectionClosed)
	}
	return fmt.Errorf("%w: bucket %q: the ordered consumer could not be recreated (connection %v; the connection's async error handler has the cause)",
		ErrWatchFailed, bucket, nc.Status())
}
