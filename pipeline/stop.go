package pipeline

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Stopping a pipeline.
//
// Cancelling Run's context drains: sources stop reading and everything
// read is delivered and acknowledged (up to DrainTimeout). Stop stops at
// once, as an error does: the second interrupt of a process, or the end of
// Drain's own deadline. A pipeline that stops at once waits AbandonAfter
// for its replicas to return, then returns without those that did not (a
// source, function or sink that ignores its context): before, one such
// sink kept Run from returning at all.

// AbandonAfter is how long a pipeline that stopped at once (an error, the
// DrainTimeout, Stop) waits for its replicas to return before Run returns
// without them (*AbandonedError).
const AbandonAfter = 2 * time.Second

// Stop stops the pipeline at once, as an error would: sources stop
// reading, every vertex stops where it is, and what is in flight stays
// unacknowledged (a durable pipeline reads it again in its next run). Run
// returns ErrStopped. Use it for a second interrupt while the pipeline
// drains. It is idempotent, and may be called before Run (which then stops
// at once) or after it returned (it does nothing).
func (p *Pipeline) Stop() {
	p.mu.Lock()
	p.stopAsked = true
	rt := p.rt
	p.mu.Unlock()
	if rt != nil {
		rt.fail(ErrStopped)
	}
}

// Drain drains the pipeline as cancelling Run's context does and waits
// until Run returned or ctx ended. When ctx ends first, it stops the
// pipeline at once (Stop) and waits for Run to return, which takes at most
// AbandonAfter. It returns nil when the drain finished, ctx's error
// otherwise. It may be called more than once, and before Run (which then
// drains as soon as it has started).
func (p *Pipeline) Drain(ctx context.Context) error {
	p.mu.Lock()
	p.drainAsked = true
	rt, ran := p.rt, p.ran
	p.mu.Unlock()
	if rt != nil {
		rt.softCancel()
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
	}
	p.Stop()
	p.mu.Lock()
	ran = p.ran
	p.mu.Unlock()
	if ran {
		<-p.done
	}
	return ctx.Err()
}

// attach makes rt the pipeline's running runtime, applying a Stop or Drain
// asked before Run got here.
func (p *Pipeline) attach(rt *runtime) {
	p.mu.Lock()
	p.rt = rt
	stop, drain := p.stopAsked, p.drainAsked
	p.mu.Unlock()
	if drain {
		rt.softCancel()
	}
	if stop {
		rt.fail(ErrStopped)
	}
}

// detach ends Run: Stop and Drain no longer reach rt (Run closes p.done
// as it returns).
func (p *Pipeline) detach() {
	p.mu.Lock()
	p.rt = nil
	p.mu.Unlock()
}

// replicaSet is the replicas running, by "vertex/replica".
type replicaSet struct {
	mu      sync.Mutex
	running map[string]*node
}

// add records replica r of n as running; the function it returns records
// its return.
func (s *replicaSet) add(n *node, r int) (returned func()) {
	name := n.name + "/" + strconv.Itoa(r)
	s.mu.Lock()
	if s.running == nil {
		s.running = map[string]*node{}
	}
	s.running[name] = n
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.running, name)
		s.mu.Unlock()
	}
}

// names returns the replicas still running, sorted, and their vertices.
func (s *replicaSet) names() ([]string, map[*node]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.running))
	nodes := map[*node]bool{}
	for name, n := range s.running {
		names = append(names, name)
		nodes[n] = true
	}
	slices.Sort(names)
	return names, nodes
}

// awaitReplicas returns once every replica returned (allReturned closed),
// or AbandonAfter after the pipeline stopped at once with some still
// running: it then records them as abandoned (p.close leaves their
// sources and sinks open, which they may still be using) and returns.
func (p *Pipeline) awaitReplicas(rt *runtime, running *replicaSet, allReturned <-chan struct{}) {
	select {
	case <-allReturned:
		return
	case <-rt.hard.Done():
	}
	t := time.NewTimer(AbandonAfter)
	defer t.Stop()
	select {
	case <-allReturned:
		return
	case <-t.C:
	}
	names, nodes := running.names()
	if len(names) == 0 {
		return // they returned as the timer fired
	}
	p.mu.Lock()
	p.abandoned = nodes
	p.mu.Unlock()
	err := &AbandonedError{Replicas: names, After: AbandonAfter}
	rt.log.Error("pipeline: replicas abandoned", zap.Strings("replicas", names), zap.Duration("after", AbandonAfter))
	rt.abandon(err)
}
