package isb

import (
	"sync"
	"sync/atomic"
)

// signal wakes readers waiting for new items without a channel operation
// per produced item: producers pay one atomic load when nobody waits.
//
// A reader that finds nothing to read calls arm, re-checks the tails of its
// partitions, and only then blocks on the returned channel; it calls disarm
// when it stops waiting. A producer calls notify after its Append has made
// the items visible (moved Tail).
//
// Why no wake-up is lost: the reader writes waiters (arm) before it reads
// Tail, and the producer writes Tail (Append) before it reads waiters
// (notify). Go's atomics are sequentially consistent, so in the single
// total order of these four operations at least one side sees the other's
// write: either the reader's re-check sees the new Tail and it does not
// block, or notify sees waiters > 0. In the second case notify closes the
// current channel under mu. The reader took its channel (under mu) before
// re-checking Tail, so either it took the channel notify closes, or it took
// a later one, which means it took it after notify ran, hence after the
// Append, and its re-check sees the new Tail. When notify finds taken
// unset it closes nothing: no reader took the current channel since it was
// made, so every armed reader holds an already closed one.
type signal struct {
	waiters atomic.Int64
	mu      sync.Mutex
	ch      chan struct{}
	taken   bool // a reader holds ch: only then is closing it worth a new channel
}

func newSignal() *signal { return &signal{ch: make(chan struct{})} }

// arm registers a waiting reader and returns the channel that the next
// notify closes. The caller must re-check for data after arm and must call
// disarm exactly once afterwards.
func (s *signal) arm() <-chan struct{} {
	s.waiters.Add(1)
	s.mu.Lock()
	s.taken = true
	ch := s.ch
	s.mu.Unlock()
	return ch
}

func (s *signal) disarm() { s.waiters.Add(-1) }

// notify wakes every armed reader. It costs one atomic load when no reader
// waits, and allocates a new channel only when a reader took the old one.
func (s *signal) notify() {
	if s.waiters.Load() != 0 {
		s.wake()
	}
}

// wake closes the channel armed readers wait on, if one of them took it.
func (s *signal) wake() {
	s.mu.Lock()
	if s.taken {
		close(s.ch)
		s.ch = make(chan struct{})
		s.taken = false
	}
	s.mu.Unlock()
}
