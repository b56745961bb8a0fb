package isb

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
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
// The gate also keeps the topic's round-robin position, so that a
// round-robin produce is admitted and routed by the same atomic operation
// (one shared cache line fewer per item than a counter of its own): a
// request made with rr takes n consecutive positions along with its n units
// and learns the first.
//
// state is one word:
//
//	63            17 16                1   0
//	+---------------+-------------------+--------+
//	|     used      | round-robin pos.  | queued |
//	+---------------+-------------------+--------+
//
// While nobody is queued, acquire and release are one compare-and-swap on
// state (the producer's hot path takes no lock). Everything that involves
// the queue takes mu. The queued bit of state is set exactly when the queue
// is not empty, and only under mu; while it is set, every fast path fails
// over to mu, so state changes only under mu and the queue and the count
// move together.
type gate struct {
	cap    int64
	parts  int64 // partitions: round-robin positions are modulo parts
	state  atomic.Int64
	closed atomic.Bool
	mu     sync.Mutex
	queue  []*waiter // arrival order; queue[0] is the head
	// stalled, when set (before the gate is shared), is called every
	// stallEvery while a request waits, with its units and how long it
	// has waited (the topic's StallReport).
	stalled    func(n int64, waited time.Duration)
	stallEvery time.Duration
}

// The fields of gate.state.
const (
	queued    = 1 // set while the queue is not empty
	rrShift   = 1
	rrBits    = 16
	rrField   = (1<<rrBits - 1) << rrShift
	usedShift = rrShift + rrBits

	// maxPartitions and maxCapacity are the largest partition count and
	// capacity the fields hold; topic options are validated against them.
	maxPartitions = 1 << rrBits
	maxCapacity   = 1<<(63-usedShift) - 1
)

func usedOf(s int64) int64 { return s >> usedShift }
func rrOf(s int64) int     { return int(s&rrField) >> rrShift }

// waiter is one queued acquire. ready is closed when it is granted
// (granted set, and with rr its first position in pos) or when the gate
// closes (granted unset).
type waiter struct {
	n       int64
	rr      bool
	pos     int
	ready   chan struct{}
	granted bool
}

// newGate returns a gate of capacity units over partitions, used of them
// held already (recovered from storage; it may exceed capacity, up to
// maxCapacity).
func newGate(capacity, used int64, partitions int) *gate {
	g := &gate{cap: capacity, parts: int64(partitions)}
	g.state.Store(used << usedShift)
	return g
}

// used returns the units held.
func (g *gate) used() int64 { return usedOf(g.state.Load()) }

// take returns state s with n more units held and, with rr, the
// round-robin position n further on. It divides only when n is a partition
// count or more, so the single-item produce pays no division.
func (g *gate) take(s, n int64, rr bool) int64 {
	s += n << usedShift
	if rr {
		step := n
		if step >= g.parts {
			step %= g.parts
		}
		pos := int64(rrOf(s)) + step
		if pos >= g.parts {
			pos -= g.parts
		}
		s = s&^rrField | pos<<rrShift
	}
	return s
}

// tryFast takes n units (and with rr, n positions, returning the first) if
// nobody is queued and they fit, without mu.
func (g *gate) tryFast(n int64, rr bool) (pos int, ok bool) {
	for {
		s := g.state.Load()
		if s&queued != 0 || usedOf(s)+n > g.cap {
			return 0, false
		}
		if g.state.CompareAndSwap(s, g.take(s, n, rr)) {
			return rrOf(s), true
		}
	}
}

// acquire takes n (1 <= n <= cap) units, and with rr n round-robin
// positions whose first it returns, waiting in FIFO order until they are
// free, ctx ends (ctx.Err()) or the gate closes (ErrClosed). A cancelled
// request holds no capacity when acquire returns (the positions of one
// granted as it was cancelled stay taken: the rotation skips them).
func (g *gate) acquire(ctx context.Context, n int64, rr bool) (pos int, err error) {
	if g.closed.Load() {
		return 0, ErrClosed
	}
	if pos, ok := g.tryFast(n, rr); ok {
		return pos, nil
	}
	g.mu.Lock()
	if g.closed.Load() {
		g.mu.Unlock()
		return 0, ErrClosed
	}
	for { // fit now, or set the queued bit and queue
		s := g.state.Load()
		if s&queued == 0 && usedOf(s)+n <= g.cap {
			if g.state.CompareAndSwap(s, g.take(s, n, rr)) {
				g.mu.Unlock()
				return rrOf(s), nil
			}
			continue
		}
		if g.state.CompareAndSwap(s, s|queued) {
			break
		}
	}
	w := &waiter{n: n, rr: rr, ready: make(chan struct{})}
	g.queue = append(g.queue, w)
	g.mu.Unlock()

	if g.await(ctx, w) {
		if w.granted {
			return w.pos, nil
		}
		return 0, ErrClosed
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if w.granted {
		// Granted concurrently with the cancellation: give it back so the
		// cancelled call takes no capacity, and let the next ones in.
		g.settleLocked(n)
		return 0, ctx.Err()
	}
	if g.closed.Load() {
		return 0, ErrClosed
	}
	if i := slices.Index(g.queue, w); i >= 0 {
		g.queue = slices.Delete(g.queue, i, i+1) // also clears the vacated slot
	}
	// The head may have left: whoever is now first may fit.
	g.settleLocked(0)
	return 0, ctx.Err()
}

// await waits until w is ready (true) or ctx ends (false), reporting the
// wait every stallEvery when the gate has a stall report.
func (g *gate) await(ctx context.Context, w *waiter) bool {
	if g.stalled == nil {
		select {
		case <-w.ready:
			return true
		case <-ctx.Done():
			return false
		}
	}
	start := time.Now()
	t := time.NewTimer(g.stallEvery)
	defer t.Stop()
	for {
		select {
		case <-w.ready:
			return true
		case <-ctx.Done():
			return false
		case <-t.C:
			g.stalled(w.n, time.Since(start))
			t.Reset(g.stallEvery)
		}
	}
}

// tryAcquire takes n units (and with rr, n positions, returning the first)
// if nobody is queued and they fit now.
func (g *gate) tryAcquire(n int64, rr bool) (pos int, ok bool, err error) {
	if g.closed.Load() {
		return 0, false, ErrClosed
	}
	pos, ok = g.tryFast(n, rr)
	return pos, ok, nil
}

// hold takes n units at once, even past capacity: items that were released
// and are held again because a new group starts below the minimum commit
// (see Topic.join). Producers then wait until they are released again.
func (g *gate) hold(n int64) { g.state.Add(n << usedShift) }

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
		if g.state.CompareAndSwap(s, s-n<<usedShift) {
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
			if g.state.CompareAndSwap(s, (s&^queued)-n<<usedShift) {
				return
			}
		}
	}
	// The bit is set: only mu holders change state now.
	s := g.state.Load() - n<<usedShift
	for len(g.queue) > 0 && usedOf(s)+g.queue[0].n <= g.cap {
		w := g.queue[0]
		w.pos = rrOf(s)
		s = g.take(s, w.n, w.rr)
		w.granted = true
		close(w.ready)
		g.queue[0] = nil
		g.queue = g.queue[1:]
	}
	s &^= queued
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
	// Clear the queued bit. Without it the fast paths may race with this
	// (releases go on after close): hence a CAS, not a store.
	for {
		s := g.state.Load()
		if g.state.CompareAndSwap(s, s&^queued) {
			return
		}
	}
}
