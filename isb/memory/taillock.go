package memory

import (
	"sync"
	"sync/atomic"
)

// tailLock is a log's tail and its appenders' lock in one word:
//
//	63                                   3     2       1       0
//	+------------------------------------+--------+--------+--------+
//	|                tail                | sealed | parked | locked |
//	+------------------------------------+--------+--------+--------+
//
// An append takes the lock with one compare-and-swap and, after filling its
// slots, publishes the new tail and drops the lock with one swap. A
// sync.Mutex beside an atomic tail costs three read-modify-writes per
// append (Lock, the tail's store, Unlock), each moving a cache line between
// the cores of concurrent producers; this costs two, on one line. That
// difference is most of the gap between a single-item produce and a Go
// channel send, which pays two as well (docs/benchmarks.md).
//
// Readers load the word and shift the flags away: the tail they see is
// always a published one, and every slot below it was written before the
// swap that published it.
//
// An appender that finds the lock held spins for a while (the critical
// section of a memory append is a few nanoseconds) and then parks on cond
// after setting parked, so that the unlock that clears it wakes the parked
// appenders. Setting parked and waiting both happen under mu, and the
// waking unlock takes mu before it broadcasts, so a wake-up is never lost.
// Parking matters when the holder was preempted or copies a large batch:
// spinning would then burn the core the holder needs.
//
// seal takes the lock for good: every later lock fails, and so do the
// appenders that were waiting for it.
type tailLock struct {
	word atomic.Int64
	mu   sync.Mutex // guards parking: setting parked, cond.Wait, cond.Broadcast
	cond sync.Cond  // L is &mu, set by init
}

const (
	tailLocked = 1 << iota // an appender holds the lock
	tailParked             // an appender waits on cond: the unlock must wake it
	tailSealed             // seal ran: no append will ever take the lock again
	tailShift  = iota      // the tail is stored above the three flags
)

// tailSpins is how many times lock re-reads a held word before it parks.
// A single-item append holds the lock for a few nanoseconds, well within
// it; a batch append or a preempted holder does not, and parking then frees
// the core.
const tailSpins = 64

func (l *tailLock) init() { l.cond.L = &l.mu }

// tail returns the published tail.
func (l *tailLock) tail() int64 { return l.word.Load() >> tailShift }

// lock takes the lock and returns the tail; ok is false once seal has run.
// The uncontended case is one load and one compare-and-swap.
func (l *tailLock) lock() (tail int64, ok bool) {
	// Expect the word free (no flag set): the CAS fails otherwise.
	w := l.word.Load() &^ (tailLocked | tailParked | tailSealed)
	if l.word.CompareAndSwap(w, w|tailLocked) {
		return w >> tailShift, true
	}
	return l.lockSlow()
}

// lockSlow is lock when the word was held, sealed or changed under it.
func (l *tailLock) lockSlow() (tail int64, ok bool) {
	for spins := 0; ; spins++ {
		w := l.word.Load()
		switch {
		case w&tailSealed != 0:
			return 0, false
		case w&tailLocked == 0:
			if l.word.CompareAndSwap(w, w|tailLocked) {
				return w >> tailShift, true
			}
		case spins >= tailSpins:
			l.park()
			spins = 0
		}
	}
}

// park waits until the lock holder of the moment unlocks (or seal runs).
func (l *tailLock) park() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		w := l.word.Load()
		if w&tailLocked == 0 || w&tailSealed != 0 {
			return // released meanwhile: try again
		}
		if w&tailParked != 0 || l.word.CompareAndSwap(w, w|tailParked) {
			l.cond.Wait()
			return
		}
	}
}

// unlock publishes tail and releases the lock.
func (l *tailLock) unlock(tail int64) { l.release(tail << tailShift) }

// release stores word and wakes the parked appenders, if any.
func (l *tailLock) release(word int64) {
	if l.word.Swap(word)&tailParked != 0 {
		l.wake()
	}
}

// wake wakes every parked appender.
func (l *tailLock) wake() {
	l.mu.Lock()
	l.cond.Broadcast()
	l.mu.Unlock()
}

// seal waits for the append in flight, if any, and makes every lock from
// now on fail. It is idempotent.
func (l *tailLock) seal() {
	if tail, ok := l.lock(); ok {
		l.release(tail<<tailShift | tailSealed)
	}
}
