package isb

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// gate is the bounded capacity of a topic, shared by its partitions. It
// counts items that hold capacity: acquired by a producer and not yet
// released by the advance of the minimum commit over all known groups.
//
// Admission is FIFO: a request succeeds at once only when nobody is queued
// and it fits; otherwise it queues, and releases grant queued requests in
// arrival order while the head fits. A small request therefore never
// overtakes a large one queued before it, so large batches cannot starve.
//
// While nobody is queued, acquire and release are one compare-and-swap on
// state (the producer's hot path takes no lock). Everything that involves
// the queue takes mu. The queued bit of state is set exactly when the queue
// is not empty, and only under mu; while it is set, every fast path fails
// over to mu, so state changes only under mu and the queue and the count
// move together.
type gate struct {
	cap    int64
	state  atomic.Int64 // used<<1 | queued
	closed atomic.Bool
	mu     sync.Mutex
	queue  []*waiter // arrival order; queue[0] is the head
}

const queued = 1 // the low bit of gate.state

// waiter is one queued acquire. ready is closed when it is granted
// (granted set) or when the gate closes (granted unset).
type waiter struct {
	n       int64
	ready   chan struct{}
	granted bool
}

func newGate(capacity, used int64) *gate {
	g := &gate{cap: capacity}
	g.state.Store(used << 1)
	return g
}

// used returns the units held.
func (g *gate) used() int64 { return g.state.Load() >> 1 }

// tryFast takes n units if nobody is queued and they fit, without mu.
func (g *gate) tryFast(n int64) bool {
	for {
		s := g.state.Load()
		if s&queued != 0 || s>>1+n > g.cap {
			return false
		}
		if g.state.CompareAndSwap(s, s+n<<1) {
			return true
		}
	}
}

// acquire takes n (1 <= n <= cap) units, waiting in FIFO order until they
// are free, ctx ends (ctx.Err()) or the gate closes (ErrClosed). A cancelled
// request holds no capacity when acquire returns.
func (g *gate) acquire(ctx context.Context, n int64) error {
	if g.closed.Load() {
		return ErrClosed
	}
	if g.tryFast(n) {
		return nil
	}
	g.mu.Lock()
	if g.closed.Load() {
		g.mu.Unlock()
		return ErrClosed
	}
	for { // fit now, or set the queued bit and queue
		s := g.state.Load()
		if s&queued == 0 && s>>1+n <= g.cap {
			if g.state.CompareAndSwap(s, s+n<<1) {
				g.mu.Unlock()
				return nil
			}
			continue
		}
		if g.state.CompareAndSwap(s, s|queued) {
			break
		}
	}
	w := &waiter{n: n, ready: make(chan struct{})}
	g.queue = append(g.queue, w)
	g.mu.Unlock()

	select {
	case <-w.ready:
		if w.granted {
			return nil
		}
		return ErrClosed
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if w.granted {
		// Granted concurrently with the cancellation: give it back so the
		// cancelled call takes no capacity, and let the next ones in.
		g.settleLocked(n)
		return ctx.Err()
	}
	if g.closed.Load() {
		return ErrClosed
	}
	if i := slices.Index(g.queue, w); i >= 0 {
		g.queue = slices.Delete(g.queue, i, i+1) // also clears the vacated slot
	}
	// The head may have left: whoever is now first may fit.
	g.settleLocked(0)
	return ctx.Err()
}

// tryAcquire takes n units if nobody is queued and they fit now.
func (g *gate) tryAcquire(n int64) (bool, error) {
	if g.closed.Load() {
		return false, ErrClosed
	}
	return g.tryFast(n), nil
}

// release returns n units and admits queued requests in order.
func (g *gate) release(n int64) {
	if n <= 0 {
		return
	}
	for {
		s := g.state.Load()
		if s&queued != 0 {
			break
		}
		if g.state.CompareAndSwap(s, s-n<<1) {
			return
		}
	}
	g.mu.Lock()
	g.settleLocked(n)
	g.mu.Unlock()
}

// settleLocked returns n units (n may be 0), grants queued requests in
// order while the head fits, and keeps the queued bit in step with the
// queue. mu is held.
func (g *gate) settleLocked(n int64) {
	if len(g.queue) == 0 {
		// The bit may still be set by a waiter that just left the queue:
		// clear it. With it clear, fast paths may race: hence a CAS.
		for {
			s := g.state.Load()
			if g.state.CompareAndSwap(s, (s&^queued)-n<<1) {
				return
			}
		}
	}
	// The bit is set: only mu holders change state now.
	used := g.used() - n
	for len(g.queue) > 0 && used+g.queue[0].n <= g.cap {
		w := g.queue[0]
		used += w.n
		w.granted = true
		close(w.ready)
		g.queue[0] = nil
		g.queue = g.queue[1:]
	}
	s := used << 1
	if len(g.queue) > 0 {
		s |= queued
	} else {
		g.queue = nil // let the backing array go once the burst is over
	}
	g.state.Store(s)
}

// waiting returns how many requests are queued.
func (g *gate) waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// close fails every queued and future request with ErrClosed. The units
// held stay held.
func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed.Store(true)
	for _, w := range g.queue {
		close(w.ready)
	}
	g.queue = nil
	g.state.Store(g.used() << 1) // the bit is set only with a queue; state is stable
}
