package watermark

// How a fetcher learns what the store holds: a goroutine per edge watches
// its bucket and folds each change into the fetcher's state.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
)

// Start watches every edge's bucket, each on a goroutine the fetcher owns,
// and returns once the current contents of every bucket are applied, so a
// Fetch right after Start sees every processor already publishing. If ctx
// ends first, or a watch fails first, the watches are stopped and ctx's
// error, or the failure, returned.
func (f *Fetcher) Start(ctx context.Context) error {
	runCtx, err := f.life.start()
	if err != nil {
		return fmt.Errorf("watermark: fetcher: %w", err)
	}
	synced := make([]chan struct{}, len(f.cfg.edges))
	for i := range f.cfg.edges {
		synced[i] = make(chan struct{})
		f.life.spawn(runCtx, func(ctx context.Context) { f.watch(ctx, i, synced[i]) })
	}
	for i, ch := range synced {
		select {
		case <-ch:
		case <-runCtx.Done():
			return fmt.Errorf("%w: fetcher stopped while starting", ErrStopped)
		case <-f.failed:
			f.Stop()
			return f.err
		case <-ctx.Done():
			f.Stop()
			return fmt.Errorf("watermark: fetcher start: waiting for bucket %q: %w", f.cfg.edges[i], ctx.Err())
		}
	}
	return nil
}

// Stop ends the watches and waits for their goroutines. It is idempotent.
func (f *Fetcher) Stop() { f.life.stop() }

// watch applies the changes of one bucket until ctx ends. A watch that
// fails is not watched again: the store healed what it could (see Store),
// so the error is the fetcher's failure.
func (f *Fetcher) watch(ctx context.Context, edge int, synced chan struct{}) {
	bucket := f.cfg.edges[edge]
	for u, err := range f.store.Watch(ctx, bucket) {
		if err != nil {
			f.fail(fmt.Errorf("watermark: watch of edge bucket %q: %w", bucket, err))
			return
		}
		if u.Op == OpSynced {
			if synced != nil {
				close(synced)
				synced = nil
			}
			continue
		}
		f.apply(edge, u)
	}
	if ctx.Err() == nil { // a store breaking the contract
		f.fail(fmt.Errorf("watermark: watch of edge bucket %q ended without an error", bucket))
	}
}

// fail records the first watch failure and reports it.
func (f *Fetcher) fail(err error) {
	f.failOnce.Do(func() {
		f.err = err
		close(f.failed)
		f.cfg.log.Error("watermark: watch failed", zap.Error(err))
		if f.cfg.onFailure != nil {
			f.cfg.onFailure(err)
		}
	})
}

// Err returns the failure of the fetcher's watches (see
// FetcherConfig.OnFailure), or nil while they run.
func (f *Fetcher) Err() error {
	select {
	case <-f.failed:
		return f.err
	default:
		return nil
	}
}

// apply folds one change of edge's bucket into the fetcher.
func (f *Fetcher) apply(edge int, u Update) {
	kind, proc, partition := parseKey(u.Key)
	if kind == keyOther {
		return
	}
	if kind == keyHeartbeat && u.Op == OpPut {
		if _, err := decodeHeartbeat(u.Value); err != nil {
			f.cfg.log.Warn("watermark: skipping heartbeat", zap.String("bucket", f.cfg.edges[edge]),
				zap.String("key", u.Key), zap.Error(err))
			return
		}
	}
	var w WMB
	if kind == keyWMB && u.Op == OpPut {
		if err := w.UnmarshalBinary(u.Value); err != nil {
			f.cfg.log.Warn("watermark: skipping WMB", zap.String("bucket", f.cfg.edges[edge]),
				zap.String("key", u.Key), zap.Error(err))
			return
		}
		if int(w.Partition) != partition {
			f.cfg.log.Warn("watermark: skipping WMB under another partition's key",
				zap.String("bucket", f.cfg.edges[edge]), zap.String("key", u.Key), zap.Stringer("wmb", w))
			return
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.expects(edge, proc) {
		return
	}
	now := f.cfg.clock()
	// Every live processor heartbeats each interval, so sweeping here drops
	// a silent processor within one interval of its timeout while any
	// upstream processor lives; when none does, the watermark holds anyway.
	// Fetch, called per message, thereby never reads the clock.
	defer f.sweep(now)
	e := f.edges[edge]
	switch {
	case kind == keyHeartbeat && u.Op == OpPut:
		p := f.proc(e, proc, now)
		p.beat, p.dead, p.heard = now, false, true
	case kind == keyHeartbeat && u.Op == OpDelete:
		i := slices.IndexFunc(e.procs, func(p *procState) bool { return p.name == proc })
		if f.cfg.expected != nil {
			// Strict: a stopped processor still holds the edge at its
			// timeline (see FetcherConfig.Processors).
			if i >= 0 {
				e.procs[i].dead = true
			}
			break
		}
		// A processor deletes its heartbeat when it stops cleanly: drop it
		// now rather than after the timeout.
		e.remove(i)
	case kind == keyWMB && u.Op == OpPut:
		if partition >= len(f.cfg.index) || f.cfg.index[partition] < 0 {
			if f.cfg.expected != nil {
				f.proc(e, proc, now).heard = true // heard of all the same
			}
			return // a partition another reader reads
		}
		p := f.proc(e, proc, now)
		p.heard = true
		p.timelines[f.cfg.index[partition]].put(w)
	default:
		return // a deleted WMB says nothing new
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

// proc returns processor name of e, creating it at now. f.mu must be held.
func (f *Fetcher) proc(e *edgeState, name string, now time.Time) *procState {
	for _, p := range e.procs {
		if p.name == name {
			return p
		}
	}
	p := &procState{name: name, since: now, timelines: make([]timeline, len(f.cfg.partitions))}
	for i := range p.timelines {
		p.timelines[i] = newTimeline(f.cfg.timelineLen)
	}
	e.procs = append(e.procs, p)
	return p
}

// sweep marks dead the processors whose heartbeats stopped for longer than
// the timeout (a later heartbeat revives them, timelines intact), and
// drops those never heard since their first WMB for as long (a WMB may
// arrive before the heartbeat in a store's initial values). Strict mode
// drops none: every expected processor counts, live or not.
// f.mu must be held.
func (f *Fetcher) sweep(now time.Time) {
	for _, e := range f.edges {
		for i := 0; i < len(e.procs); i++ {
			p := e.procs[i]
			if p.dead {
				continue
			}
			last := p.beat
			if last.IsZero() {
				last = p.since
			}
			if now.Sub(last) <= f.cfg.timeout {
				continue
			}
			if p.beat.IsZero() {
				if f.cfg.expected != nil {
					continue // no heartbeat to time out
				}
				// Never heard: nothing worth keeping.
				e.remove(i)
				i-- // the last processor moved into slot i
				continue
			}
			p.dead = true
		}
	}
}

// remove drops processor i (nothing when i < 0).
func (e *edgeState) remove(i int) {
	if i < 0 {
		return
	}
	last := len(e.procs) - 1
	e.procs[i] = e.procs[last]
	e.procs[last] = nil
	e.procs = e.procs[:last]
}
