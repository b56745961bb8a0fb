package jskv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// open starts a KV watcher of the bucket: from scratch (the last value of
// every key, then the changes) the first time, from w.next after that. It
// makes sure the bucket is the one the watch opened first: a bucket
// missing, or created again since (its stream's creation time differs), is
// ErrBucketDeleted. The returned stop ends the watcher and waits for its
// delivery goroutine.
func (w *watch) open(ctx context.Context) (jetstream.KeyWatcher, func(), error) {
	if w.nc.IsClosed() {
		return nil, nil, w.closed()
	}
	octx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	// The bucket exists implicitly on the first open; on a later one it
	// existed, and missing it is a deletion.
	kv, err := w.s.bucket(octx, w.bucket, !w.known)
	if errors.Is(err, errNoBucket) {
		return nil, nil, fmt.Errorf("%w: stream %s not found", ErrBucketDeleted, streamName(w.bucket))
	}
	if err != nil {
		return nil, nil, w.classify(err)
	}
	// The stream's state before the watcher: its last sequence bounds the
	// initial values (see update), and its creation time identifies it.
	info, err := w.identify(octx)
	if err != nil {
		return nil, nil, err
	}
	if !w.known {
		w.known, w.created, w.lastSeq = true, info.Created, info.State.LastSeq
	}

	// The watcher's subscription lives as long as its context, so the
	// bound on opening it is a timer that cancels that context unless the
	// open returned first. Without one, a consumer-create request lost in
	// a server restart waited forever (issue 20).
	wctx, wcancel := context.WithCancel(ctx)
	timer := time.AfterFunc(openTimeout, wcancel)
	var opts []jetstream.WatchOpt
	if w.next > 0 {
		// Every value the stream still holds from w.next on, not only the
		// last of each key: with a History above 1 no change is lost.
		opts = append(opts, jetstream.ResumeFromRevision(w.next), jetstream.IncludeHistory())
	}
	kw, err := kv.WatchAll(wctx, opts...)
	if !timer.Stop() {
		if err == nil {
			stopWatcher(wcancel, kw)
		}
		wcancel()
		return nil, nil, w.classify(fmt.Errorf("opening a watcher from revision %d: no answer in %v: %w", w.next, openTimeout, context.DeadlineExceeded))
	}
	if err != nil {
		wcancel()
		w.s.forget(w.bucket, err)
		if errors.Is(err, nats.ErrStreamNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, nil, fmt.Errorf("%w: stream %s not found", ErrBucketDeleted, streamName(w.bucket))
		}
		return nil, nil, w.classify(fmt.Errorf("opening a watcher from revision %d: %w", w.next, err))
	}
	return kw, func() { stopWatcher(wcancel, kw) }, nil
}

// identify looks the bucket's stream up and checks that it is the one the
// watch watched so far (when it knows one): a stream missing, or created
// again since, is ErrBucketDeleted.
func (w *watch) identify(ctx context.Context) (*jetstream.StreamInfo, error) {
	st, err := w.s.js.Stream(ctx, streamName(w.bucket))
	if err != nil {
		w.s.forget(w.bucket, err)
		if errors.Is(err, jetstream.ErrStreamNotFound) && w.known {
			return nil, fmt.Errorf("%w: stream %s not found", ErrBucketDeleted, streamName(w.bucket))
		}
		return nil, w.classify(err) // on the first open: deleted just now, the next open creates it
	}
	info := st.CachedInfo()
	if w.known && !info.Created.Equal(w.created) {
		return nil, fmt.Errorf("%w: stream %s was created again at %v (the one watched was created at %v)",
			ErrBucketDeleted, streamName(w.bucket), info.Created, w.created)
	}
	return info, nil
}

// verify is identify on a watcher that runs: a transient failure (the
// server slow or away) says nothing and is not an error.
func (w *watch) verify(ctx context.Context) error {
	vctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	if _, err := w.identify(vctx); err != nil && permanent(err) {
		return err
	}
	return nil
}

// classify adds to err what makes it permanent but is not in it: a
// request the server refused for permissions times out, and the reason is
// the connection's last error.
func (w *watch) classify(err error) error {
	if w.nc.IsClosed() {
		return fmt.Errorf("%w: %w", w.closed(), err)
	}
	if last := w.nc.LastError(); errors.Is(last, nats.ErrPermissionViolation) && strings.Contains(last.Error(), streamName(w.bucket)) {
		return fmt.Errorf("%w (%w)", last, err)
	}
	return err
}

// permanent reports whether err cannot heal by opening again: the bucket
// is gone, the connection closed for good, or the account may not do what
// a watch needs. Everything else (timeouts, no responders, JetStream not
// ready yet after a restart, a consumer gone) is retried.
func permanent(err error) bool {
	for _, p := range []error{
		ErrBucketDeleted, nats.ErrConnectionClosed, nats.ErrPermissionViolation, nats.ErrAuthorization,
		jetstream.ErrJetStreamNotEnabledForAccount,
	} {
		if errors.Is(err, p) {
			return true
		}
	}
	return false
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
