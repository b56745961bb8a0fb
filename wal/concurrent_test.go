package wal

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// TestConcurrentAppendGCCompactClose: 4 appenders, a GC loop and a 1 ms
// periodic compaction run together, then Close lands in the middle. Every
// Append returns nil or ErrClosed; after a reopen every entry whose Append
// returned nil and whose window was not closed is replayed exactly once,
// and nothing else.
func TestConcurrentAppendGCCompactClose(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir, SegmentSize(tableSeg), CompactEvery(time.Millisecond), CompactAfter(tableSeg))
	const appenders = 4
	var (
		mu     sync.Mutex
		acked  = map[crashKey]int{} // entry -> window
		closed = map[int]bool{}
		cur    = 0 // newest window, guarded by mu
		wg     sync.WaitGroup
	)
	window := func() int { mu.Lock(); defer mu.Unlock(); return cur }
	for p := range int32(appenders) {
		wg.Go(func() {
			for off := int64(0); ; off += 3 {
				id := window()
				batch := []Entry{crashEntry(p, off, id), crashEntry(p, off+1, id), crashEntry(p, off+2, id)}
				err := w.Append(ctx, batch...)
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("Append: %v", err)
					return
				}
				mu.Lock()
				for _, e := range batch {
					acked[crashKey{p, e.Offset}] = id
				}
				mu.Unlock()
			}
		})
	}
	wg.Go(func() {
		for {
			time.Sleep(2 * time.Millisecond)
			mu.Lock()
			cur++
			target := cur - 3 // two windows back: no appender still appends to it
			mu.Unlock()
			if target < 0 {
				continue
			}
			err := w.GC(ctx, win(target).End, win(target))
			if errors.Is(err, ErrClosed) {
				return
			}
			if err != nil {
				t.Errorf("GC: %v", err)
				return
			}
			mu.Lock()
			closed[target] = true
			mu.Unlock()
		}
	})
	time.Sleep(300 * time.Millisecond)
	closeT(t, w)
	wg.Wait()
	if w.Stats().Compactions == 0 {
		t.Log("no compaction ran before Close") // timing: Open's compaction below still runs
	}
	w = openT(t, dir, SegmentSize(tableSeg))
	defer closeT(t, w)
	seen := map[crashKey]bool{}
	for e, err := range w.Replay() {
		if err != nil {
			t.Fatal(err)
		}
		k := crashKey{e.Partition, e.Offset}
		id := windowID(e.Windows[0])
		if seen[k] || closed[id] || !sameEntry(e, crashEntry(k.p, k.off, id)) {
			t.Fatalf("replayed %+v: seen before %v, window closed %v", e, seen[k], closed[id])
		}
		seen[k] = true
	}
	want := 0
	for k, id := range acked {
		if closed[id] {
			continue
		}
		want++
		if !seen[k] {
			t.Fatalf("acknowledged partition %d offset %d of open window %d not replayed", k.p, k.off, id)
		}
	}
	t.Logf("%d acknowledged entries, %d of open windows replayed, %d windows closed", len(acked), want, len(closed))
	if len(seen) != want {
		// An Append that returned ErrClosed was never written: Close
		// answers every request the committer took.
		t.Fatalf("replayed %d entries, %d acknowledged in open windows", len(seen), want)
	}
	if len(acked) == 0 || len(closed) == 0 {
		t.Fatal("nothing was appended or closed")
	}
}
