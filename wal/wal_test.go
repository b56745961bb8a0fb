package wal

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

func TestAppendReplayReopen(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir)
	if got := replayAll(t, w); len(got) != 0 {
		t.Fatalf("new log replays %d entries", len(got))
	}
	var want []Entry
	for b := range 10 {
		var batch []Entry
		for i := range 7 {
			batch = append(batch, msg(int32(i%2), int64(b*7+i), b%3))
		}
		appendT(t, w, batch...)
		want = append(want, batch...)
	}
	closeT(t, w)
	w = openT(t, dir)
	defer closeT(t, w)
	checkEntries(t, replayAll(t, w), want)
	rec := w.Recovered()
	if rec.Entries != 70 || rec.LastOffsets[0] != 69 || rec.LastOffsets[1] != 68 || rec.Repaired != nil || rec.Compacted {
		t.Fatalf("recovered %+v", rec)
	}
}

// TestReplayKeysOutliveTheLoop: keys and windows are the caller's to keep
// after Replay ends and its segments are unmapped (values are not: see
// Entry); equal keys share one string.
func TestReplayKeysOutliveTheLoop(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir)
	var want []Entry
	for i := range 30 {
		want = append(want, msg(0, int64(i), i%4))
	}
	appendT(t, w, want...)
	closeT(t, w)
	w = openT(t, dir)
	defer closeT(t, w)
	var keys [][]string
	var windows [][]Window
	for e, err := range w.Replay() {
		if err != nil {
			t.Fatal(err)
		}
		keys, windows = append(keys, e.Keys), append(windows, e.Windows)
	}
	if len(keys) != len(want) {
		t.Fatalf("replayed %d entries", len(keys))
	}
	for i := range want {
		if !slices.Equal(keys[i], want[i].Keys) || !sameWindows(windows[i], want[i].Windows) {
			t.Fatalf("entry %d after the loop: keys %v windows %v, want %v %v", i, keys[i], windows[i], want[i].Keys, want[i].Windows)
		}
	}
	if unsafe.StringData(keys[0][0]) != unsafe.StringData(keys[3][0]) { // both "k0"
		t.Fatal("equal keys were not interned")
	}
}

// TestAppendAsyncOverlapsTheCommit shows that AppendAsync returns while the
// committer still holds the batch, that its Pending is done only after the
// write, and that appends of one goroutine complete in order: the last
// Pending done means every earlier one is.
func TestAppendAsyncOverlapsTheCommit(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir, CompactEvery(0))
	held, release := make(chan struct{}), make(chan struct{})
	testHookGather = func(*WAL) {
		testHookGather = nil // hold the first batch only
		close(held)
		<-release
	}
	defer func() { testHookGather = nil }()
	first, err := w.AppendAsync(ctx, msg(0, 1, 1))
	if err != nil {
		t.Fatal(err)
	}
	<-held // the committer took the first append and is held before writing it
	var later []*Pending
	for off := int64(2); off <= 4; off++ {
		p, err := w.AppendAsync(ctx, msg(0, off, 1))
		if err != nil {
			t.Fatal(err)
		}
		later = append(later, p)
	}
	for i, p := range append([]*Pending{first}, later...) {
		select {
		case <-p.Done():
			t.Fatalf("append %d is done while the committer is held before writing", i)
		default:
		}
	}
	close(release)
	if err := later[len(later)-1].Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for i, p := range append([]*Pending{first}, later...) {
		select {
		case <-p.Done():
		default:
			t.Fatalf("append %d is not done although a later one is", i)
		}
		if err := p.Wait(ctx); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	closeT(t, w)
	w = openT(t, dir)
	defer closeT(t, w)
	var offsets []int64
	for e, err := range w.Replay() {
		if err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, e.Offset)
	}
	if !slices.Equal(offsets, []int64{1, 2, 3, 4}) {
		t.Fatalf("replayed offsets %v, want [1 2 3 4]", offsets)
	}
}

// TestOnCommitSeesEveryGroupCommit: OnCommit is called once per group
// commit (Stats.Batches), with the time it took.
func TestOnCommitSeesEveryGroupCommit(t *testing.T) {
	var commits, timed atomic.Int64
	w := openT(t, t.TempDir(), OnCommit(func(d time.Duration) {
		commits.Add(1)
		if d > 0 {
			timed.Add(1)
		}
	}))
	defer closeT(t, w)
	for b := range 5 {
		appendT(t, w, msg(0, int64(b), b))
	}
	if got, want := commits.Load(), w.Stats().Batches; got != want || got != 5 {
		t.Fatalf("OnCommit called %d times for %d batches, want 5", got, want)
	}
	if timed.Load() != 5 {
		t.Fatalf("%d of 5 commits took a time", timed.Load())
	}
}
