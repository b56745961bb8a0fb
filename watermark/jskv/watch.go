package jskv

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/watermark"
)

// Bounds of a watch's recovery: opening a KV watcher (a consumer created
// on the server) waits at most openTimeout; a failed open is retried after
// a pause growing from reopenMin to reopenMax, and while the connection is
// down the watch waits for it to come back (checking at most every
// reopenMax) instead of trying. A watch checks every verifyInterval that
// its bucket is still the one it watches: the deletion advisory that tells
// it at once is best effort (the server may drop it), and the client's
// consumer, recreated after missed heartbeats, would follow a bucket
// created again from the old one's revision.
const (
	openTimeout    = 5 * time.Second
	reopenMin      = 20 * time.Millisecond
	reopenMax      = time.Second
	verifyInterval = 2 * time.Second
)

// Watch implements [watermark.Store.Watch] on KV watchers, creating the
// bucket if it does not exist. A watcher is started when the range loop
// starts; when it fails, or the connection reconnects (the server may have
// restarted and lost the consumer), another is started from the revision
// after the last change delivered, so no change is lost or repeated. Every
// watcher is stopped (its subscription removed and its delivery goroutine
// finished) before the loop returns. The watch ends with an error, a
// *WatchError, only when it cannot go on: see the package doc.
func (s *Store) Watch(ctx context.Context, bucket string) iter.Seq2[watermark.Update, error] {
	return func(yield func(watermark.Update, error) bool) {
		if err := watermark.CheckBucket(bucket); err != nil {
			yield(watermark.Update{}, fmt.Errorf("jskv: %w", err))
			return
		}
		if ctx.Err() != nil {
			return
		}
		w := &watch{s: s, bucket: bucket, nc: s.js.Conn(), yield: yield}
		w.status = w.nc.StatusChanged(nats.CONNECTED, nats.CLOSED)
		defer w.nc.RemoveStatusListener(w.status)
		if sub, err := w.nc.ChanSubscribe(deletedAdvisory(bucket), w.deleted()); err == nil {
			defer func() { _ = sub.Unsubscribe() }()
		} // else: deletions are still found when a watcher is opened again
		if err := w.run(ctx); err != nil && ctx.Err() == nil {
			yield(watermark.Update{}, err)
		}
	}
}

// deletedAdvisory is the subject JetStream announces the deletion of the
// bucket's stream on: the watch learns of it at once, instead of when its
// consumer's heartbeats are missed (and possibly after a Put created the
// bucket again, which the consumer would follow from the old sequence).
func deletedAdvisory(bucket string) string {
	return "$JS.EVENT.ADVISORY.STREAM.DELETED." + streamName(bucket)
}

func streamName(bucket string) string { return "KV_" + bucket }

// watch is the state of one Watch: what it delivered, and what identifies
// the bucket it watches.
type watch struct {
	s       *Store
	bucket  string
	nc      *nats.Conn
	yield   func(watermark.Update, error) bool
	status  chan nats.Status // CONNECTED (after a reconnect) and CLOSED
	gone    chan *nats.Msg   // deletion advisories of the bucket's stream
	next    uint64           // revision of the next change to deliver: everything below was delivered or superseded
	synced  bool             // OpSynced was delivered
	known   bool             // created is set: the bucket was found once
	created time.Time        // the bucket's stream's creation time, which tells it from a bucket created again
	lastSeq uint64           // the stream's last sequence when the watch first opened
}

func (w *watch) deleted() chan *nats.Msg {
	w.gone = make(chan *nats.Msg, 8)
	return w.gone
}

// errStopped says the range loop ended: the watch returns without error.
var errStopped = errors.New("jskv: watch stopped")

// run opens watchers and delivers their changes until ctx ends, the loop
// stops, or an error cannot heal (returned).
func (w *watch) run(ctx context.Context) error {
	pause := reopenMin
	for ctx.Err() == nil {
		kw, stop, err := w.open(ctx)
		progressed := false
		if err == nil {
			next, synced := w.next, w.synced
			err = w.deliver(ctx, kw)
			stop()
			progressed = w.next != next || w.synced != synced
		}
		switch {
		case errors.Is(err, errStopped) || ctx.Err() != nil:
			return nil
		case errors.Is(err, errReopen) && progressed:
			// The watcher worked: open the next at once. One that ends
			// having delivered nothing pauses below, so a watcher that
			// keeps ending at once does not spin.
			pause = reopenMin
			continue
		case permanent(err):
			return &WatchError{Bucket: w.bucket, Err: err}
		}
		if !w.wait(ctx, pause) {
			return nil
		}
		pause = min(2*pause, reopenMax)
	}
	return nil
}

// errReopen says a watcher ended for a reason another watcher heals (the
// connection reconnected, the watcher's subscription ended): open again at
// once.
var errReopen = errors.New("jskv: watcher ended")

// wait pauses before the next open: for d while connected, until the
// connection is back while it is down. It returns false when ctx ended.
func (w *watch) wait(ctx context.Context, d time.Duration) bool {
	for {
		if w.nc.Status() != nats.CONNECTED && !w.nc.IsClosed() {
			d = reopenMax // the status event ends the wait sooner
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-w.status:
			t.Stop()
		case <-t.C:
		}
		if w.nc.Status() == nats.CONNECTED || w.nc.IsClosed() {
			return true // closed: the next open says so
		}
	}
}

// deliver yields the changes kw delivers until kw cannot go on (errReopen),
// the connection reconnects (errReopen) or closes, the bucket's stream is
// announced deleted (errReopen: the next open finds out) or found deleted
// (ErrBucketDeleted), ctx ends or the loop stops (errStopped).
func (w *watch) deliver(ctx context.Context, kw jetstream.KeyWatcher) error {
	verify := time.NewTicker(verifyInterval)
	defer verify.Stop()
	for {
		var e jetstream.KeyValueEntry
		var open bool
		select {
		case <-ctx.Done():
			return errStopped
		case <-verify.C:
			if err := w.verify(ctx); err != nil {
				return err
			}
			continue
		case st := <-w.status:
			if st == nats.CLOSED {
				return w.closed()
			}
			return errReopen // reconnected: the consumer may be gone with the server
		case <-w.gone:
			return errReopen
		case e, open = <-kw.Updates():
		}
		if ctx.Err() != nil {
			return errStopped
		}
		if !open {
			if w.nc.IsClosed() {
				return w.closed()
			}
			return errReopen // the client gave up recreating the consumer
		}
		u, ok := w.update(e)
		if ok && !w.yield(u, nil) {
			return errStopped
		}
	}
}

// update turns an entry into the Update to deliver; ok is false for one
// not to deliver (delivered before, or the marker of a key deleted before
// the watch).
func (w *watch) update(e jetstream.KeyValueEntry) (u watermark.Update, ok bool) {
	if e == nil { // the watcher's marker: its initial values are done
		if w.synced {
			return u, false // a reopened watcher's: the watch synced long ago
		}
		w.synced = true
		// Every value in the bucket at the first open is at or below
		// lastSeq or was delivered above: a reopen need not go back.
		w.next = max(w.next, w.lastSeq+1)
		return watermark.Update{Op: watermark.OpSynced}, true
	}
	if e.Revision() < w.next {
		return u, false // delivered before this watcher opened
	}
	w.next = e.Revision() + 1
	switch {
	case e.Operation() == jetstream.KeyValuePut:
		u = watermark.Update{Op: watermark.OpPut, Key: e.Key(), Value: e.Value()}
		if u.Value == nil {
			u.Value = []byte{} // a put of nothing is a value
		}
	case !w.synced:
		return u, false // the marker of a key deleted before the watch
	default: // KeyValueDelete, KeyValuePurge
		u = watermark.Update{Op: watermark.OpDelete, Key: e.Key()}
	}
	return u, true
}

// closed is the error of a watch whose connection closed: nothing will
// reconnect it.
func (w *watch) closed() error {
	if last := w.nc.LastError(); last != nil {
		return fmt.Errorf("%w (last error: %w)", nats.ErrConnectionClosed, last)
	}
	return nats.ErrConnectionClosed
}
