package memory

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestTailLockExcludes: appenders that take the lock concurrently each see
// the tail the previous one published, so a plain counter guarded by the
// lock (the race detector watches it) ends at the exact number of appends.
func TestTailLockExcludes(t *testing.T) {
	var l tailLock
	l.init()
	const workers, each = 8, 5000
	count := 0 // guarded by l
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				tail, ok := l.lock()
				if !ok {
					t.Error("lock failed on an unsealed lock")
					return
				}
				if tail != int64(count) {
					t.Errorf("locked at tail %d, count %d", tail, count)
				}
				count++
				l.unlock(tail + 1)
			}
		})
	}
	wg.Wait()
	if got := l.tail(); got != workers*each || count != workers*each {
		t.Fatalf("tail %d, count %d; want %d", got, count, workers*each)
	}
}

// waitParked waits until an appender has parked on l.
func waitParked(t *testing.T, l *tailLock) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for l.word.Load()&tailParked == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no appender parked: word %#x", l.word.Load())
		}
		runtime.Gosched()
	}
}

// TestTailLockParkedAppenderWakes: an appender that finds the lock held for
// long parks, and the unlock that publishes the next tail wakes it with
// that tail.
func TestTailLockParkedAppenderWakes(t *testing.T) {
	var l tailLock
	l.init()
	if _, ok := l.lock(); !ok {
		t.Fatal("lock failed")
	}
	got := make(chan int64)
	go func() {
		tail, ok := l.lock()
		if !ok {
			tail = -1
		}
		got <- tail
	}()
	waitParked(t, &l)
	l.unlock(7)
	if tail := <-got; tail != 7 {
		t.Fatalf("parked appender locked at tail %d; want 7", tail)
	}
	if w := l.word.Load(); w != 7<<tailShift|tailLocked {
		t.Fatalf("word %#x; want tail 7, locked, nothing parked", w)
	}
	l.unlock(8)
}

// TestTailLockSealFailsParkedAppenders: seal waits for the holder, and an
// appender parked behind it either got the lock first (and its append
// counts) or fails; after seal every lock fails and the tail stays.
func TestTailLockSealFailsParkedAppenders(t *testing.T) {
	var l tailLock
	l.init()
	if _, ok := l.lock(); !ok {
		t.Fatal("lock failed")
	}
	appended := make(chan bool)
	go func() {
		tail, ok := l.lock()
		if ok {
			l.unlock(tail + 1)
		}
		appended <- ok
	}()
	waitParked(t, &l)
	sealed := make(chan struct{})
	go func() {
		l.seal()
		close(sealed)
	}()
	select {
	case <-sealed:
		t.Fatal("seal returned while the lock was held")
	case <-time.After(20 * time.Millisecond):
	}
	l.unlock(3)
	<-sealed
	want := int64(3)
	if <-appended {
		want = 4
	}
	if got := l.tail(); got != want {
		t.Fatalf("tail after seal %d; want %d", got, want)
	}
	if _, ok := l.lock(); ok {
		t.Fatal("lock succeeded after seal")
	}
	l.seal() // idempotent: returns at once
	if got := l.tail(); got != want {
		t.Fatalf("tail after a second seal %d; want %d", got, want)
	}
}
