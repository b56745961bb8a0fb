package pipeline

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/runnel-dev/runnel/isb"
)

// groupCommits makes a durable backend persist its consumer groups'
// commits in groups: Commit records the offset in memory and returns; a
// goroutine persists the latest commit of every group and partition every
// interval (and at Close). isb/mmap writes a checkpoint file per commit (a
// write, two fsyncs and a rename: milliseconds here), and a pipeline's
// readers commit after nearly every acknowledged chunk, so persisting each
// one bounded a durable pipeline at a few tens of thousands of messages a
// second.
//
// Why it is safe: a vertex commits its input only after everything it made
// of it is durable downstream (the writer's produce returned). A commit
// that is lost because the process died before it was persisted only
// makes the vertex read and process those messages again: duplicates,
// which at-least-once allows, never a loss. Release (which lets storage
// delete consumed segments) is deferred the same way, and passed on only
// after the commits it relies on are persisted, so a restart never finds a
// stored commit pointing into a deleted segment. Capacity and the drain
// follow the topic's in-memory commits, so neither waits for the interval.
type groupCommits[T any] struct {
	isb.Backend[T]
	every time.Duration
	logs  []*groupCommitLog[T]

	// persistMu serializes persisting with DeleteGroup, so a pass cannot
	// write a checkpoint for a group being deleted after it is gone.
	persistMu sync.Mutex

	errMu sync.Mutex
	err   error // the first persist failure: every later Commit returns it

	opened    bool          // Open succeeded: loop runs
	stop      chan struct{} // closed by Close: loop returns
	done      chan struct{} // closed by loop when it returns
	closeOnce sync.Once
	closeErr  error
}

// groupCommitLog is a partition whose commits groupCommits persists.
type groupCommitLog[T any] struct {
	isb.Log[T]
	owner *groupCommits[T]

	mu      sync.Mutex       // guards the fields below
	want    map[string]int64 // commits not yet persisted, by group
	release int64            // the latest Release not yet passed on; -1: none
	// done is, by group, the latest commit a pass persisted (or storage
	// held when persisted first asked), so that persisted never waits for
	// storage's lock, which a pass holds through a checkpoint's fsyncs.
	done map[string]int64
}

var _ isb.Backend[int] = (*groupCommits[int])(nil)

func newGroupCommits[T any](b isb.Backend[T], every time.Duration) *groupCommits[T] {
	return &groupCommits[T]{Backend: b, every: every, stop: make(chan struct{}), done: make(chan struct{})}
}

// Open opens the backend and starts the goroutine that persists commits.
// It declares what the backend declared: the wrapper changes when commits
// are persisted, nothing of what storage can do.
func (g *groupCommits[T]) Open(topic string, partitions int) (isb.Caps, error) {
	caps, err := g.Backend.Open(topic, partitions)
	if err != nil {
		return caps, err
	}
	g.opened = true
	g.logs = make([]*groupCommitLog[T], partitions)
	for i := range g.logs {
		g.logs[i] = &groupCommitLog[T]{Log: g.Backend.Partition(i), owner: g, want: map[string]int64{}, release: -1, done: map[string]int64{}}
	}
	go g.loop()
	return caps, nil
}

// Partition returns partition p with deferred commits; every other call
// goes to the backend's log as it is.
func (g *groupCommits[T]) Partition(p int) isb.Log[T] { return g.logs[p] }

// loop persists every interval until Close.
func (g *groupCommits[T]) loop() {
	defer close(g.done)
	t := time.NewTicker(g.every)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
			g.persist()
		}
	}
}

// persist writes every recorded commit, then passes on the releases that
// were requested before it started.
func (g *groupCommits[T]) persist() error {
	g.persistMu.Lock()
	defer g.persistMu.Unlock()
	var errs []error
	for _, l := range g.logs {
		l.mu.Lock()
		// The release is taken first: it was computed from commits that
		// are all recorded in want by now (the topic commits, then
		// releases), so persisting want makes it safe.
		release, want := l.release, l.want
		l.release, l.want = -1, make(map[string]int64, len(want))
		l.mu.Unlock()
		failed := false
		for group, off := range want {
			if err := l.Log.Commit(context.Background(), group, off); err != nil {
				errs = append(errs, err)
				failed = true
				continue
			}
			l.mu.Lock()
			l.done[group] = max(l.done[group], off)
			l.mu.Unlock()
		}
		if failed {
			continue // keep the segments the failed commits may still need
		}
		if release >= 0 {
			if err := l.Log.Release(release); err != nil {
				errs = append(errs, err)
			}
		}
	}
	err := errors.Join(errs...)
	if err != nil {
		g.errMu.Lock()
		if g.err == nil {
			g.err = err
		}
		g.errMu.Unlock()
	}
	return err
}

func (g *groupCommits[T]) failed() error {
	g.errMu.Lock()
	defer g.errMu.Unlock()
	return g.err
}

// DeleteGroup forgets the group's unpersisted commits, then deletes it
// from storage.
func (g *groupCommits[T]) DeleteGroup(group string) error {
	g.persistMu.Lock()
	defer g.persistMu.Unlock()
	for _, l := range g.logs {
		l.mu.Lock()
		delete(l.want, group)
		l.mu.Unlock()
	}
	return g.Backend.DeleteGroup(group)
}

// Close persists what is recorded and closes the backend, in that order:
// a clean stop loses no commit.
func (g *groupCommits[T]) Close() error {
	g.closeOnce.Do(func() {
		// 1. Stop the periodic pass (it may be running: wait for it).
		close(g.stop)
		var err error
		if g.opened {
			<-g.done
			// 2. The last pass: every commit made before Close is stored.
			err = g.persist()
		}
		// 3. Close storage, whatever the pass did.
		g.closeErr = errors.Join(err, g.Backend.Close())
	})
	return g.closeErr
}

// Commit records the commit for the next pass. It fails once a pass has
// failed, so a reader learns that storage is failing.
func (l *groupCommitLog[T]) Commit(_ context.Context, group string, offset int64) error {
	if err := l.owner.failed(); err != nil {
		return err
	}
	l.mu.Lock()
	if cur, ok := l.want[group]; !ok || offset > cur {
		l.want[group] = offset
	}
	l.mu.Unlock()
	return nil
}

// Committed returns the group's latest commit, persisted or not.
func (l *groupCommitLog[T]) Committed(group string) (int64, bool, error) {
	l.mu.Lock()
	off, ok := l.want[group]
	l.mu.Unlock()
	if ok {
		return off, true, nil
	}
	return l.Log.Committed(group)
}

// persisted returns the group's latest persisted commit: what a restart
// resumes from. After its first call for a group it takes no lock of
// storage's (a map's reader asks after every commit).
func (l *groupCommitLog[T]) persisted(group string) (int64, bool) {
	l.mu.Lock()
	off, ok := l.done[group]
	l.mu.Unlock()
	if ok {
		return off, true
	}
	off, ok, err := l.Log.Committed(group)
	if err != nil || !ok {
		return off, false // the head: no commit yet (or none storage can tell)
	}
	l.mu.Lock()
	off = max(off, l.done[group]) // a pass may have persisted a later one meanwhile
	l.done[group] = off
	l.mu.Unlock()
	return off, true
}

// Release records offset for the next pass.
func (l *groupCommitLog[T]) Release(offset int64) error {
	l.mu.Lock()
	l.release = max(l.release, offset)
	l.mu.Unlock()
	return nil
}
