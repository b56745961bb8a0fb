package isb

import (
	"slices"
	"sync"
	"sync/atomic"
)

// waiters are the consumers waiting for new items in one partition. A
// producer wakes them after its Append made items visible (moved Tail),
// paying one atomic load when nobody waits and never a channel operation
// per item; an append to one partition wakes only the consumers of that
// partition, one per group, not every consumer of the topic.
//
// A consumer that finds nothing to read adds its wake channel (capacity 1)
// to the waiters of each partition it owns, re-checks their tails, and only
// then blocks on the channel; it removes the channel from each when it
// stops waiting.
//
// Why no wake-up is lost: the consumer counts itself in n (add) before it
// reads Tail, and the producer writes Tail (Append) before it reads n
// (notify). Go's atomics are sequentially consistent, so in the single
// total order of these four operations at least one side sees the other's
// write: either the consumer's re-check sees the new Tail and it does not
// block, or notify sees n > 0. In the second case notify takes mu, which
// the consumer held while it added its channel and counted itself, so the
// channel is in chans and gets a token (or holds one already: a token that
// outlives its wait only costs the consumer one more look at its tails).
type waiters struct {
	n     atomic.Int32 // len(chans), read without mu by every produce
	mu    sync.Mutex
	chans []chan struct{}
}

// add registers ch; the caller must re-check for data after it, and call
// remove(ch) once it stops waiting.
func (w *waiters) add(ch chan struct{}) {
	w.mu.Lock()
	w.chans = append(w.chans, ch)
	w.n.Add(1)
	w.mu.Unlock()
}

func (w *waiters) remove(ch chan struct{}) {
	w.mu.Lock()
	if i := slices.Index(w.chans, ch); i >= 0 {
		w.chans = slices.Delete(w.chans, i, i+1)
		w.n.Add(-1)
	}
	w.mu.Unlock()
}

// notify wakes every registered consumer. It costs one atomic load when
// none waits.
func (w *waiters) notify() {
	if w.n.Load() != 0 {
		w.wake()
	}
}

// wake leaves a token in every registered channel that has none.
func (w *waiters) wake() {
	w.mu.Lock()
	for _, ch := range w.chans {
		select {
		case ch <- struct{}{}:
		default: // a token is there already
		}
	}
	w.mu.Unlock()
}

// changes wakes every goroutine waiting for the next change of storage
// shared by processes: producers waiting for room in storage that enforces
// its own limits. A waiter takes the channel before it looks at storage
// and waits on it after, so a change in between is never lost.
type changes struct {
	mu sync.Mutex
	ch chan struct{} // closed by the next signal; nil when nobody took it
}

// next returns the channel the next signal closes.
func (c *changes) next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	return c.ch
}

// signal wakes everyone waiting for a change. It costs a lock when nobody
// waits.
func (c *changes) signal() {
	c.mu.Lock()
	if c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
	c.mu.Unlock()
}
