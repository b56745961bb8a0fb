package mmap

import (
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
)

// TestConcurrentAppendersShareAFlush: appenders that write while a flush is
// running share the next one. The test holds flushMu (a flush in progress),
// lets every appender copy its records, and counts the msyncs once it lets
// go: exactly one, and every record is durable, published and readable.
func TestConcurrentAppendersShareAFlush(t *testing.T) {
	for _, one := range []bool{false, true} {
		name := "Append"
		if one {
			name = "AppendOne"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			b := open(t, dir, 1, SegmentSize(1<<20), Flush(Immediate()))
			p := b.parts[0]
			const appenders, each = 8, 5
			total := int64(appenders * each)
			if one {
				// AppendOne appends one item per call.
				total = appenders
			}
			// The first append after an open rewrites the producer
			// checkpoint under flushMu (markDirty); the appenders below
			// must only wait on the flush.
			if _, err := waitWrite(p.Append([]string{"warm-up"})); err != nil {
				t.Fatal(err)
			}
			before := p.flushes.Load()

			p.flushMu.Lock()
			var wg sync.WaitGroup
			errs := make([]error, appenders)
			firsts := make([]int64, appenders)
			for g := range appenders {
				wg.Go(func() {
					if one {
						firsts[g], errs[g] = waitWrite(p.AppendOne(item(g))) // last is first
						return
					}
					items := make([]string, each)
					for i := range items {
						items[i] = item(g*each + i)
					}
					var last int64
					last, errs[g] = waitWrite(p.Append(items))
					firsts[g] = last - each + 1
				})
			}
			// Wait (on a condition, not a clock) until every appender has
			// copied its records: each is now queued on flushMu.
			for p.written.Load().tail < 1+total {
				runtime.Gosched()
			}
			if got := p.Tail(); got != 1 {
				t.Fatalf("tail = %d before the flush, want 1: records published before they are durable", got)
			}
			p.flushMu.Unlock()
			wg.Wait()

			for g, err := range errs {
				if err != nil {
					t.Fatalf("appender %d: %v", g, err)
				}
			}
			if got := p.flushes.Load() - before; got != 1 {
				t.Fatalf("%d appenders made %d flushes, want 1 shared flush", appenders, got)
			}
			if got := durableTail(p); got != 1+total {
				t.Fatalf("durable tail = %d, want %d", got, 1+total)
			}
			// Each appender's records are contiguous at the offset its
			// Append returned, whatever order the appenders ran in.
			got := readAll(t, p)[1:] // after the warm-up
			if int64(len(got)) != total {
				t.Fatalf("read %d items, want %d", len(got), total)
			}
			n := int(total) / appenders
			for g := range appenders {
				for i := range n {
					want := item(g*n + i)
					if at := firsts[g] - 1 + int64(i); got[at] != want {
						t.Fatalf("item at %d = %q, want %q (appender %d)", at+1, got[at], want, g)
					}
				}
			}
			sorted := slices.Clone(firsts)
			slices.Sort(sorted)
			for i, f := range sorted {
				if f != 1+int64(i*n) {
					t.Fatalf("first offsets %v: appends overlap or leave gaps", sorted)
				}
			}
		})
	}
}

// TestLoneAppenderFlushesEachAppend: with nobody to share with, every
// Append under Immediate is its own flush (the group flush waits for no
// timer and no company), and Batch(n) flushes once per n records.
func TestLoneAppenderFlushesEachAppend(t *testing.T) {
	for _, tc := range []struct {
		policy FlushPolicy
		want   int64
	}{
		{Immediate(), 10},
		{Batch(6), 3}, // 10 appends of 2: flushes at 6, 12 and 18 records
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			var observed atomic.Int64 // OnFlush sees every flush of records
			b := open(t, t.TempDir(), 1, SegmentSize(1<<20), Flush(tc.policy), OnFlush(func(d time.Duration) {
				if d > 0 {
					observed.Add(1)
				}
			}))
			p := b.parts[0]
			before := p.flushes.Load()
			appendItems(t, p, 0, 20, 2)
			if got := p.flushes.Load() - before; got != tc.want {
				t.Fatalf("10 appends of 2 under %v made %d flushes, want %d", tc.policy, got, tc.want)
			}
			if got := observed.Load(); got != tc.want {
				t.Fatalf("OnFlush saw %d flushes with a duration, want %d", got, tc.want)
			}
			checkItems(t, readAll(t, p), 0, 20)
		})
	}
}

// TestConcurrentAppendAcrossRollover: concurrent appenders whose records
// roll over into new segments keep every record, in per-appender order,
// across a close and reopen.
func TestConcurrentAppendAcrossRollover(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, 1) // one-page segments: a rollover every few records
	p := b.parts[0]
	const appenders, batches, each = 4, 20, 3
	var wg sync.WaitGroup
	errs := make(chan error, appenders*batches)
	for g := range appenders {
		wg.Go(func() {
			for k := range batches {
				items := make([]string, each)
				for i := range items {
					items[i] = item((g*batches+k)*each + i)
				}
				if _, err := waitWrite(p.Append(items)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := open(t, dir, 1)
	got := readAll(t, b2.Partition(0))
	if len(got) != appenders*batches*each {
		t.Fatalf("read %d items after reopen, want %d", len(got), appenders*batches*each)
	}
	next := make(map[int]int) // appender -> index of its next item
	for off, s := range got {
		found := false
		for g := range appenders {
			if s == item(g*batches*each+next[g]) {
				next[g]++
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("item at %d = %q is out of its appender's order", off, s)
		}
	}
}

// TestSealStopsAppends: after Seal every Append and AppendOne is ErrClosed
// and nothing more is stored.
func TestSealStopsAppends(t *testing.T) {
	b := open(t, t.TempDir(), 1)
	p := b.parts[0]
	appendItems(t, p, 0, 3, 3)
	p.Seal()
	p.Seal() // a second call does nothing
	if _, err := p.Append([]string{item(3)}); !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("Append after Seal: err = %v, want ErrClosed", err)
	}
	if _, err := p.AppendOne(item(3)); !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("AppendOne after Seal: err = %v, want ErrClosed", err)
	}
	checkItems(t, readAll(t, p), 0, 3)
}

// stageItems appends items from..to-1 in one call without waiting for its
// Write (the old Stage: written, neither durable nor visible), checks its
// offsets and returns the pending Write (Wait is the old Publish).
func stageItems(t *testing.T, p *partition[string], from, to int) isb.Write {
	t.Helper()
	var items []string
	for i := from; i < to; i++ {
		items = append(items, item(i))
	}
	w, err := p.Append(items)
	if err != nil || !w.Pending() || w.Last() != int64(to-1) {
		t.Fatalf("Append of %d..%d = pending %v, last %d, %v; want a pending Write ending at %d", from, to, w.Pending(), w.Last(), err, to-1)
	}
	return w
}

// TestStagedWritesPublishTogether: appended records are written but
// neither durable nor visible until their Write is waited; one Wait
// flushes everything written before it, so a Wait of an earlier write then
// finds its records published without a flush of its own. Records written
// and never waited stay invisible, also when a rollover flushed them with
// their segment; after a reopen they may be there (intact, in order after
// the published ones): a writer that never learned they were durable
// writes them again, which at-least-once allows.
func TestStagedWritesPublishTogether(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, 1, SegmentSize(MinSegmentSize), Flush(Immediate()))
	p := b.parts[0]
	appendItems(t, p, 0, 1, 1) // the first append after an open also checkpoints
	before := p.flushes.Load()
	w1 := stageItems(t, p, 1, 40)
	w2 := stageItems(t, p, 40, 80)
	if p.Tail() != 1 || durableTail(p) != 1 {
		t.Fatalf("tail %d, durable %d after staging; want 1, 1", p.Tail(), durableTail(p))
	}
	if last, err := w2.Wait(bg); err != nil || last != 79 {
		t.Fatalf("Wait of the second write = %d, %v; want 79, nil", last, err)
	}
	if last, err := w1.Wait(bg); err != nil || last != 39 {
		t.Fatalf("Wait of the first write = %d, %v; want 39, nil", last, err)
	}
	if got := p.flushes.Load() - before; got != 1 {
		t.Fatalf("two staged writes made %d flushes, want 1", got)
	}
	if p.Tail() != 80 || durableTail(p) != 80 {
		t.Fatalf("tail %d, durable %d after waiting the write ending at 80; want 80, 80", p.Tail(), durableTail(p))
	}
	// Written past a segment's end (rollovers) and never waited.
	n := 80
	var last isb.Write
	for p.written.Load().seg == p.pub.Load().seg {
		last = stageItems(t, p, n, n+50)
		n += 50
	}
	if p.Tail() != 80 {
		t.Fatalf("tail %d after staging past a rollover, want 80", p.Tail())
	}
	checkItems(t, readAll(t, p), 0, 80)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := last.Wait(bg); !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("Wait after Close = %v, want ErrClosed", err)
	}
	b = open(t, dir, 1, SegmentSize(MinSegmentSize))
	got := readAll(t, b.Partition(0))
	if len(got) < 80 || len(got) > n {
		t.Fatalf("reopened with %d records, want the 80 published and at most the %d staged", len(got), n)
	}
	checkItems(t, got, 0, len(got))
}
