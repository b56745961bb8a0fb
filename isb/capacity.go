package isb

import (
	"context"
	"slices"
	"sync"
)

// gate is the bounded capacity of a topic, shared by its partitions. It
// counts items that hold capacity: acquired by a producer and not yet
// released by the advance of the minimum commit over all known groups.
//
// Admission is FIFO: a request succeeds at once only when nobody is queued
// and it fits; otherwise it queues, and Release grants queued requests in
// arrival order while the head fits. A small request therefore never
// overtakes a large one queued before it, so large batches cannot starve.
type gate struct {
	mu     sync.Mutex
	cap    int64
	used   int64
	queue  []*waiter // arrival order; queue[0] is the head
	closed bool
}

// waiter is one queued Acquire. ready is closed when it is granted
// (granted set) or when the gate closes (granted unset).
type waiter struct {
	n       int64
	ready   chan struct{}
	granted bool
}

func newGate(capacity, used int64) *gate { return &gate{cap: capacity, used: used} }

// acquire takes n (1 <= n <= cap) units, waiting in FIFO order until they
// are free, ctx ends (ctx.Err()) or the gate closes (ErrClosed). A cancelled
// request holds no capacity when acquire returns.
func (g *gate) acquire(ctx context.Context, n int64) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return ErrClosed
	}
	if len(g.queue) == 0 && g.used+n <= g.cap {
		g.used += n
		g.mu.Unlock()
		return nil
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
		g.used -= n
		g.grantLocked()
		return ctx.Err()
	}
	if g.closed {
		return ErrClosed
	}
	for i, q := range g.queue {
		if q == w {
			g.queue = slices.Delete(g.queue, i, i+1) // also clears the vacated slot
			break
		}
	}
	// The head may have left: whoever is now first may fit.
	g.grantLocked()
	return ctx.Err()
}

// tryAcquire takes n units if nobody is queued and they fit now.
func (g *gate) tryAcquire(n int64) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false, ErrClosed
	}
	if len(g.queue) == 0 && g.used+n <= g.cap {
		g.used += n
		return true, nil
	}
	return false, nil
}

// release returns n units and admits queued requests in order.
func (g *gate) release(n int64) {
	if n <= 0 {
		return
	}
	g.mu.Lock()
	g.used -= n
	g.grantLocked()
	g.mu.Unlock()
}

func (g *gate) grantLocked() {
	for len(g.queue) > 0 && g.used+g.queue[0].n <= g.cap {
		w := g.queue[0]
		g.used += w.n
		w.granted = true
		close(w.ready)
		g.queue[0] = nil
		g.queue = g.queue[1:]
	}
	if len(g.queue) == 0 {
		g.queue = nil // let the backing array go once the burst is over
	}
}

// waiting returns how many requests are queued.
func (g *gate) waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// close fails every queued and future request with ErrClosed.
func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for _, w := range g.queue {
		close(w.ready)
	}
	g.queue = nil
}
