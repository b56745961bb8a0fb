package wal

import (
	"errors"
	"github.com/runnel-dev/runnel/isb"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCompactionBoundsDisk appends 60 windows of 160 entries (about five
// 4 KiB segments each) with two windows open at a time, closing the oldest
// as the next one fills: disk use must stay bounded by the open windows
// while 30 windows of history go through, and return to one segment once
// every window is closed. Each reopen replays exactly the open windows.
func TestCompactionBoundsDisk(t *testing.T) {
	const (
		windows   = 30
		perWindow = 160
	)
	dir := t.TempDir()
	w := openT(t, dir, SegmentSize(tableSeg), CompactEvery(0))
	pad := strings.Repeat("x", 80)
	entries := map[int][]Entry{} // open windows' entries
	var seq int64
	var peak, history int64
	for i := range windows {
		for range perWindow / 8 {
			var batch []Entry
			for range 8 {
				e := msg(int32(seq%3), seq, i)
				e.Value = append(e.Value, pad...)
				batch = append(batch, e)
				seq++
			}
			appendT(t, w, batch...)
			entries[i] = append(entries[i], batch...)
			history += int64(len(batch) * 130)
			size, err := dirSize(dir)
			if err != nil {
				t.Fatal(err)
			}
			peak = max(peak, size)
		}
		if i >= 1 {
			if err := w.GC(ctx, win(i-1).End, win(i-1)); err != nil {
				t.Fatal(err)
			}
			delete(entries, i-1)
		}
		if i == windows/2 { // a restart midway replays the open window
			closeT(t, w)
			w = openT(t, dir, SegmentSize(tableSeg), CompactEvery(0))
			rec := w.Recovered()
			checkEntries(t, replayAll(t, w), entries[i])
			if !rec.Compacted || rec.LastOffsets[int32((seq-1)%3)] != seq-1 || !rec.Watermark.Equal(win(i-1).End) {
				t.Fatalf("recovered %+v after %d entries", rec, seq)
			}
		}
	}
	// Open windows hold at most two windows of ~21 KiB; compaction runs
	// when the log passes twice what it kept, so the peak stays within a
	// few open windows' worth while the history is ~30 of them.
	openBytes := int64(2 * perWindow * 130)
	t.Logf("history %d KiB, peak disk use %d KiB, open windows %d KiB, %d compactions", history>>10, peak>>10, openBytes>>10, w.Stats().Compactions)
	if peak > 4*openBytes || history < 10*openBytes {
		t.Fatalf("peak disk use %d bytes for %d bytes of open windows and %d of history", peak, openBytes, history)
	}
	if err := w.GC(ctx, win(windows-1).End, win(windows-1)); err != nil {
		t.Fatal(err)
	}
	if err := w.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	st := w.Stats()
	closeT(t, w)
	gens, _ := filepath.Glob(filepath.Join(dir, genPrefix+"*"))
	if len(gens) != 1 {
		t.Fatalf("generations left: %v", gens)
	}
	segs, _, err := listSegments(gens[0])
	if err != nil {
		t.Fatal(err)
	}
	size, _ := dirSize(dir)
	if st.Segments != 1 || len(segs) != 1 || size > 200 {
		t.Fatalf("after every window closed: %d segments (stats %d), %d bytes on disk", len(segs), st.Segments, size)
	}
	w = openT(t, dir, SegmentSize(tableSeg))
	defer closeT(t, w)
	if got := replayAll(t, w); len(got) != 0 {
		t.Fatalf("replayed %d entries with every window closed", len(got))
	}
	rec := w.Recovered()
	if rec.Compacted || len(rec.LastOffsets) != 3 || rec.LastOffsets[int32((seq-1)%3)] != seq-1 || !rec.Watermark.Equal(win(windows-1).End) {
		t.Fatalf("recovered %+v, want the offsets and watermark of compacted entries", rec)
	}
}

// TestGCWindows: sliding windows are dropped from an entry one by one,
// session windows by id whatever their bounds; a reopen replays what is
// open, with closed windows removed from each entry.
func TestGCWindows(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir)
	a, b, c := win(0), win(1), win(2)
	s1 := Window{Start: base, End: base.Add(time.Second), Session: 7}
	s2 := Window{Start: base, End: base.Add(time.Second), Session: 8}
	e := func(off int64, ws ...Window) Entry {
		m := msg(0, off, 0)
		m.Windows = ws
		return m
	}
	appendT(t, w, e(1, a, b), e(2, b, c), e(3, a), e(4, s1), e(5, s2))
	// Session 7 grew since; closing it by id drops its entry.
	grown := Window{Start: base, End: base.Add(time.Minute), Session: 7}
	if err := w.GC(ctx, base.Add(time.Hour), a, grown); err != nil {
		t.Fatal(err)
	}
	closeT(t, w)
	w = openT(t, dir)
	want := []Entry{e(1, b), e(2, b, c), e(5, s2)}
	checkEntries(t, replayAll(t, w), want)
	if rec := w.Recovered(); !rec.Compacted || rec.Entries != 3 || rec.LastOffsets[0] != 5 {
		t.Fatalf("recovered %+v", rec)
	}
	// Replay twice gives the same; after an Append it is refused.
	checkEntries(t, replayAll(t, w), want)
	appendT(t, w, e(6, c))
	for _, err := range w.Replay() {
		if err != ErrReplayAfterAppend {
			t.Fatalf("Replay after Append: %v", err)
		}
	}
	closeT(t, w)
}

// TestPeriodicCompaction: with CompactEvery, a closed window is compacted
// away without an explicit Compact.
func TestPeriodicCompaction(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir, SegmentSize(tableSeg), CompactEvery(5*time.Millisecond))
	defer closeT(t, w)
	for i := range 200 {
		appendT(t, w, msg(0, int64(i), 0))
	}
	appendT(t, w, msg(0, 200, 1))
	if w.Stats().Segments < 3 {
		t.Fatalf("%d segments before the GC", w.Stats().Segments)
	}
	if err := w.GC(ctx, win(0).End, win(0)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for w.Stats().Compactions == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no periodic compaction in 10s")
		}
		time.Sleep(time.Millisecond)
	}
	if st := w.Stats(); st.Segments != 1 {
		t.Fatalf("stats after compaction %+v", st)
	}
	if des := logDirs(t, dir); len(des) != 1 || des[0] != genName(2) {
		t.Fatalf("directory holds %v beside %s, want only %s", des, metaFile, genName(2))
	}
}

// TestGroupCommit: the Appends waiting while the committer writes go into
// one batch with one fsync; one Append of many entries is one batch too.
func TestGroupCommit(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir)
	const appenders = 10
	testHookGather = func(w *WAL) {
		for len(w.reqs) < appenders-1 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	defer func() { testHookGather = nil }()
	errs := make(chan error, appenders)
	for i := range appenders {
		go func() {
			var batch []Entry
			for j := range 3 {
				batch = append(batch, msg(int32(i), int64(j), 0))
			}
			errs <- w.Append(ctx, batch...)
		}()
	}
	for range appenders {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	testHookGather = nil
	if st := w.Stats(); st.Batches != 1 || st.Entries != 3*appenders {
		t.Fatalf("%d Appends of 3 entries: stats %+v, want 1 batch", appenders, st)
	}
	var big []Entry
	for j := range 1000 {
		big = append(big, msg(0, int64(100+j), 1))
	}
	appendT(t, w, big...)
	if st := w.Stats(); st.Batches != 2 || st.Entries != 3*appenders+1000 {
		t.Fatalf("one Append of 1000 entries: stats %+v, want 2 batches in all", st)
	}
	closeT(t, w)
	w = openT(t, dir)
	defer closeT(t, w)
	got := replayAll(t, w)
	if len(got) != 3*appenders+1000 {
		t.Fatalf("replayed %d entries", len(got))
	}
	// Each Append's entries are consecutive and in order.
	for i := 0; i < 3*appenders; i += 3 {
		for j := range 3 {
			if got[i+j].Offset != int64(j) || got[i+j].Partition != got[i].Partition {
				t.Fatalf("entries %d..%d: %v", i, i+2, got[i:i+3])
			}
		}
	}
}

func TestInvalidInput(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		opt  Option
		want string
	}{
		{SegmentSize(100), "wal: option SegmentSize: must be at least 4096 (got 100)"},
		{CompactEvery(-1), "wal: option CompactEvery: must not be negative (got -1ns)"},
		{CompactAfter(-1), "wal: option CompactAfter: must not be negative (got -1)"},
		{MaxBatchBytes(0), "wal: option MaxBatchBytes: must be at least 1 (got 0)"},
		{nil, "wal: option wal.Option: must not be nil (option 2 of 2) (got <nil>)"},
	} {
		_, err := Open(dir, CompactEvery(0), c.opt)
		var oe *isb.OptionError
		if !errors.As(err, &oe) || !errors.Is(err, isb.ErrInvalidOption) || err.Error() != c.want {
			t.Errorf("Open with a bad option: %v; want an *isb.OptionError %q", err, c.want)
		}
	}
	w := openT(t, dir)
	defer closeT(t, w)
	noWindow := msg(0, 1, 0)
	noWindow.Windows = nil
	old := msg(0, 2, 0)
	old.EventTime = time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, e := range []Entry{noWindow, old} {
		if err := w.Append(ctx, e); err == nil || !strings.HasPrefix(err.Error(), "wal: invalid argument") {
			t.Errorf("Append(%v): %v", e, err)
		}
	}
	if err := w.GC(ctx, time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), win(0)); err == nil {
		t.Error("GC with a watermark in the year 3000 succeeded")
	}
	if st := w.Stats(); st.Entries != 0 {
		t.Fatalf("refused entries were written: %+v", st)
	}
}

func TestClose(t *testing.T) {
	w := openT(t, t.TempDir())
	appendT(t, w, msg(0, 1, 0))
	closeT(t, w)
	closeT(t, w) // idempotent
	if err := w.Append(ctx, msg(0, 2, 0)); err != ErrClosed {
		t.Fatalf("Append after Close: %v", err)
	}
	if err := w.GC(ctx, base, win(0)); err != ErrClosed {
		t.Fatalf("GC after Close: %v", err)
	}
	if err := w.Compact(ctx); err != ErrClosed {
		t.Fatalf("Compact after Close: %v", err)
	}
	if w.Err() != nil {
		t.Fatalf("Err after a clean Close: %v", w.Err())
	}
	select {
	case <-w.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
}

// TestWriteFailureStops: a failed write stops the WAL for good: the Append
// gets the error, later calls get it too, Done closes, Close returns it.
func TestWriteFailureStops(t *testing.T) {
	w := openT(t, t.TempDir())
	appendT(t, w, msg(0, 1, 0))
	w.log.Close() // tidwall/wal now refuses writes
	err := w.Append(ctx, msg(0, 2, 0))
	if err == nil || !strings.Contains(err.Error(), "wal: write batch") {
		t.Fatalf("Append on a failed log: %v", err)
	}
	<-w.Done()
	if w.Err() == nil || w.Err().Error() != err.Error() {
		t.Fatalf("Err %v, want %v", w.Err(), err)
	}
	if err2 := w.GC(ctx, base, win(0)); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("GC after the failure: %v", err2)
	}
	if cerr := w.Close(); cerr == nil || cerr.Error() != err.Error() {
		t.Fatalf("Close: %v, want %v", cerr, err)
	}
}

// TestAppendsDuringCompaction: a compaction runs in its own goroutine, so
// Appends and GCs complete while it is held (gated, no timing); at the
// switch, what was appended meanwhile is carried into the new generation,
// and a window closed meanwhile is dropped by the next compaction.
func TestAppendsDuringCompaction(t *testing.T) {
	dir := t.TempDir()
	// Only the explicit Compact runs: no periodic or growth trigger.
	w := openT(t, dir, SegmentSize(tableSeg), CompactEvery(0), CompactAfter(1<<40))
	for i := range 100 {
		appendT(t, w, msg(0, int64(i), i%2)) // windows 0 and 1
	}
	if err := w.GC(ctx, win(0).End, win(0)); err != nil {
		t.Fatal(err)
	}
	held, release := make(chan struct{}), make(chan struct{})
	testHookCompact = func(<-chan struct{}) {
		close(held)
		<-release
	}
	defer func() { testHookCompact = nil }()
	compacted := make(chan error, 1)
	go func() { compacted <- w.Compact(ctx) }()
	<-held
	// The compaction is held: appends (windows 1 and 2) and a GC (window
	// 1) still complete, each one its own batch and fsync.
	for i := 100; i < 150; i++ {
		appendT(t, w, msg(0, int64(i), 1+i%2))
	}
	if err := w.GC(ctx, win(1).End, win(1)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-compacted:
		t.Fatalf("Compact returned %v while its goroutine is held", err)
	default:
	}
	if st := w.Stats(); st.Compactions != 0 {
		t.Fatalf("stats while the compaction is held: %+v", st)
	}
	close(release)
	if err := <-compacted; err != nil {
		t.Fatal(err)
	}
	testHookCompact = nil
	if st := w.Stats(); st.Compactions != 1 || st.CompactFailures != 0 {
		t.Fatalf("stats after the compaction: %+v", st)
	}
	// Window 0 is gone; window 1 (closed during the compaction) is still
	// in the new generation, with its GC event, until the next one.
	closeT(t, w)
	w = openT(t, dir, SegmentSize(tableSeg), CompactEvery(0))
	var want []Entry
	for i := 100; i < 150; i++ {
		if 1+i%2 == 2 {
			want = append(want, msg(0, int64(i), 2))
		}
	}
	checkEntries(t, replayAll(t, w), want)
	if rec := w.Recovered(); !rec.Compacted || rec.LastOffsets[0] != 149 || !rec.Watermark.Equal(win(1).End) {
		t.Fatalf("recovered %+v", rec)
	}
	closeT(t, w)
	if des := logDirs(t, dir); len(des) != 1 || des[0] != genName(3) {
		t.Fatalf("directory holds %v beside %s, want only %s (the held compaction's and Open's)", des, metaFile, genName(3))
	}
}

// TestCloseAbandonsCompaction: Close during a held compaction stops it,
// answers its Compact with ErrClosed and leaves the log as it was.
func TestCloseAbandonsCompaction(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir, CompactEvery(0), CompactAfter(1<<40))
	appendT(t, w, msg(0, 1, 0), msg(0, 2, 1))
	if err := w.GC(ctx, win(0).End, win(0)); err != nil {
		t.Fatal(err)
	}
	held := make(chan struct{})
	testHookCompact = func(quit <-chan struct{}) {
		close(held)
		<-quit // held until Close abandons it
	}
	defer func() { testHookCompact = nil }()
	compacted := make(chan error, 1)
	go func() { compacted <- w.Compact(ctx) }()
	<-held
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-compacted; !errors.Is(err, ErrClosed) {
		t.Fatalf("Compact during Close: %v, want ErrClosed", err)
	}
	if des := logDirs(t, dir); len(des) != 1 || des[0] != genName(1) {
		t.Fatalf("directory holds %v beside %s, want only %s", des, metaFile, genName(1))
	}
	w = openT(t, dir)
	defer closeT(t, w)
	checkEntries(t, replayAll(t, w), []Entry{msg(0, 2, 1)})
}
