package jetstream

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// What other processes do, and how this one learns it.
//
//   - Appends: every append announces the stream's new tail (the offset
//     after its last item) on a core subject, one small message per
//     append call, not per item, followed on a packed stream by the
//     sequence and item count of each frame it stored (for the usage);
//     the announcement raises the tail here and wakes the topic's blocked
//     Pulls. Reads learn the tail too (a batch's end says how many
//     messages follow it), and so does the refresh, which also covers
//     writers that announce nothing (a stream written by another client).
//   - Commits: a watch of the commit bucket keeps every group's commit of
//     every partition, for the usage check, retention and Groups, and
//     wakes the topic (a producer waiting for room retries). A watch that
//     ends (its subscription closed) is made again from the last revision
//     it delivered.
//   - The refresh (every Refresh) reads each stream's state, deletes what
//     every group has committed, and finds a stream deleted under the
//     topic.

// onAnnounce handles an announcement runnel.isb.{base}.{p} of a tail:
// "{tail}", or on a packed stream "{tail} {seq} {count} {seq} {count}...".
func (b *Backend[T]) onAnnounce(m *nats.Msg) {
	i := strings.LastIndexByte(m.Subject, '.')
	p, err := strconv.Atoi(m.Subject[i+1:])
	if err != nil || p < 0 || p >= len(b.parts) {
		return
	}
	l := b.parts[p]
	fields := strings.Fields(string(m.Data))
	if len(fields) == 0 {
		return
	}
	if b.cfg.packed() {
		for k := 1; k+1 < len(fields); k += 2 {
			seq, err1 := strconv.ParseUint(fields[k], 10, 64)
			n, err2 := strconv.Atoi(fields[k+1])
			if err1 == nil && err2 == nil && seq > 0 && n > 0 && n <= MaxFrameItems {
				l.frames.learn(seq, n)
			}
		}
	}
	if tail, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
		l.raiseTail(tail)
	}
}

// startWatch starts the watch of the commit bucket and waits until it has
// delivered every key once, so that Groups and the usage check know every
// group when Open returns: a writer must not treat the partition as empty
// before it has looked.
func (b *Backend[T]) startWatch() error {
	ready := make(chan struct{})
	b.wg.Go(func() { b.watchCommits(ready) })
	select {
	case <-ready:
		return nil
	case <-time.After(b.cfg.requestTimeout):
		return &StreamError{Stream: "KV_" + b.names.bucket, Op: "watch commits", Kind: ErrUnreachable,
			Err: context.DeadlineExceeded}
	}
}

func (b *Backend[T]) watchCommits(ready chan struct{}) {
	var rev uint64
	for wait := 10 * time.Millisecond; b.ctx.Err() == nil; wait = min(2*wait, time.Second) {
		var opts []natsjs.WatchOpt
		if rev > 0 {
			opts = append(opts, natsjs.ResumeFromRevision(rev+1))
		}
		w, err := b.commits.WatchFiltered(b.ctx, []string{b.names.groupsFilter()}, opts...)
		if err == nil {
			for e := range w.Updates() {
				if e == nil {
					if ready != nil {
						close(ready)
						ready = nil
					}
					continue
				}
				rev = e.Revision()
				b.applyCommit(e)
				wait = 10 * time.Millisecond
			}
			w.Stop()
		}
		if b.ctx.Err() != nil {
			return
		}
		b.cfg.log.Warn("jetstream: commit watch ended, watching again", zap.String("bucket", b.names.bucket),
			zap.Uint64("from revision", rev+1), zap.Error(err))
		select {
		case <-time.After(wait):
		case <-b.ctx.Done():
			return
		}
	}
}

// applyCommit applies one entry of the commit bucket.
func (b *Backend[T]) applyCommit(e natsjs.KeyValueEntry) {
	p, group, ok := b.names.parseKey(e.Key())
	if !ok || p >= len(b.parts) {
		return
	}
	l := b.parts[p]
	switch e.Operation() {
	case natsjs.KeyValuePut:
		off, err := strconv.ParseInt(string(e.Value()), 10, 64)
		if err != nil {
			b.cfg.log.Warn("jetstream: commit that is not an offset", zap.String("key", e.Key()))
			return
		}
		l.learnCommit(group, off, e.Revision())
	default: // deleted or purged
		l.learnDelete(group, e.Revision())
	}
	l.notify()
}

// refreshLoop runs the refresh every Refresh, and a partition's retention
// whenever its Release moved far enough.
func (b *Backend[T]) refreshLoop() {
	t := time.NewTicker(b.cfg.refresh)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
			for _, l := range b.parts {
				l.refresh()
			}
		case <-b.kick:
			for _, l := range b.parts {
				l.retain()
			}
		}
	}
}

// refresh reads the stream's state and applies retention.
func (l *log[T]) refresh() {
	ctx, cancel := context.WithTimeout(l.ctx, l.b.cfg.requestTimeout)
	defer cancel()
	info, err := l.s.Info(ctx)
	switch {
	case err == nil:
		if err := l.observe(ctx, info.State); err != nil && l.ctx.Err() == nil {
			l.b.cfg.log.Debug("jetstream: refresh of the last frame failed", zap.String("stream", l.stream), zap.Error(err))
		}
		l.retainCtx(ctx)
	case errors.Is(err, natsjs.ErrStreamNotFound):
		l.markDeleted()
	case l.ctx.Err() == nil:
		l.b.cfg.log.Debug("jetstream: refresh failed", zap.String("stream", l.stream), zap.Error(err))
	}
}

// retain deletes the messages below both the highest Release and every
// commit the bucket holds (a group of another process is known there even
// when this process's topic never saw it). With no group nothing is
// deleted: it is kept for a group created later.
func (l *log[T]) retain() {
	ctx, cancel := context.WithTimeout(l.ctx, l.b.cfg.requestTimeout)
	defer cancel()
	l.retainCtx(ctx)
}

// On a packed stream only whole frames are deleted: the frame holding the
// lowest commit stays, also when the commit is its end (its count is not
// always known here); it goes with the next frame's first commit.
func (l *log[T]) retainCtx(ctx context.Context) {
	low, ok := l.low()
	to := min(low, l.released.Load())
	seq, _ := split(to, l.shift) // the first message kept
	if !ok || seq <= l.purged || join(seq, 0, l.shift) <= l.head.Load() {
		return
	}
	if err := l.s.Purge(ctx, natsjs.WithPurgeSequence(seq)); err != nil {
		if errors.Is(err, natsjs.ErrStreamNotFound) {
			l.markDeleted()
		}
		return
	}
	l.purged = seq
	raise(&l.head, join(seq, 0, l.shift))
}
