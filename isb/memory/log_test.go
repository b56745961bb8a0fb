package memory_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/memory"
)

// openLogs returns the logs of a freshly opened backend.
func openLogs[T any](t *testing.T, partitions int, opts ...memory.Option) (*memory.Backend[T], []*memory.Log[T]) {
	t.Helper()
	b, err := memory.New[T](opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := b.Open("t", partitions); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	logs := make([]*memory.Log[T], partitions)
	for p := range logs {
		logs[p] = b.Log(p)
	}
	return b, logs
}

func seq(from, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = from + i
	}
	return s
}

var ctx = context.Background()

// appendFirst appends items, checks that the Write is complete at once
// (memory's writes are not deferred), waits it and returns the offset of
// the first item (the Write reports the last).
func appendFirst[T any](t testing.TB, l *memory.Log[T], items []T) int64 {
	t.Helper()
	w, err := l.Append(items)
	if err != nil {
		t.Fatalf("Append(%d items): %v", len(items), err)
	}
	if w.Pending() {
		t.Fatalf("Append(%d items) returned a pending Write; memory's writes complete at once", len(items))
	}
	last, err := w.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait of Append(%d items): %v", len(items), err)
	}
	return last - int64(len(items)) + 1
}

func mustAppend[T any](t *testing.T, l *memory.Log[T], items []T, wantFirst int64) {
	t.Helper()
	if first := appendFirst(t, l, items); first != wantFirst {
		t.Fatalf("Append(%d items) at %d; want %d", len(items), first, wantFirst)
	}
}

// waitWrite waits the Write of an Append and returns its last offset; it
// does not need t, so goroutines use it.
func waitWrite(w isb.Write, err error) (last int64, _ error) {
	if err != nil {
		return -1, err
	}
	return w.Wait(ctx)
}

// committed is Log.Committed, which never fails on memory storage.
func committed[T any](t testing.TB, l *memory.Log[T], group string) (int64, bool) {
	t.Helper()
	off, ok, err := l.Committed(group)
	if err != nil {
		t.Errorf("Committed(%s): %v", group, err)
	}
	return off, ok
}

// groupsOf is Backend.Groups, which never fails on memory storage.
func groupsOf[T any](t testing.TB, b *memory.Backend[T]) []string {
	t.Helper()
	g, err := b.Groups()
	if err != nil {
		t.Errorf("Groups: %v", err)
	}
	return g
}

func TestOptionsValidated(t *testing.T) {
	for _, tc := range []struct {
		opt    memory.Option
		option string
	}{
		{memory.SegmentSize(0), "SegmentSize"},
		{memory.SegmentSize(-3), "SegmentSize"},
		{memory.MaxFreeSegments(-1), "MaxFreeSegments"},
	} {
		_, err := memory.New[int](tc.opt)
		var oe *isb.OptionError
		if !errors.As(err, &oe) || oe.Option != tc.option || !errors.Is(err, isb.ErrInvalidOption) {
			t.Errorf("New(%s) error = %v; want *isb.OptionError for %s", tc.option, err, tc.option)
		}
	}
	if _, err := memory.New[int](memory.SegmentSize(1), memory.MaxFreeSegments(0)); err != nil {
		t.Errorf("New with the smallest valid options: %v", err)
	}
}

func TestOpen(t *testing.T) {
	b, err := memory.New[int]()
	if err != nil {
		t.Fatal(err)
	}
	var oe *isb.OptionError
	if _, err := b.Open("t", 0); !errors.As(err, &oe) || oe.Option != "Partitions" {
		t.Fatalf("Open with 0 partitions = %v; want *isb.OptionError for Partitions", err)
	}
	// Memory logs serialize their own appends, and their writes complete
	// at once.
	if caps, err := b.Open("t", 3); err != nil || caps != (isb.Caps{Concurrent: true}) {
		t.Fatalf("Open = %+v, %v; want Caps{Concurrent: true}, nil", caps, err)
	}
	if _, err := b.Open("u", 1); !errors.Is(err, memory.ErrOpened) {
		t.Fatalf("second Open = %v; want ErrOpened", err)
	}
	for p := range 3 {
		if l := b.Partition(p); l.Head() != 0 || l.Tail() != 0 {
			t.Errorf("partition %d: head %d tail %d; want 0 0", p, l.Head(), l.Tail())
		}
	}
	if g := groupsOf(t, b); len(g) != 0 {
		t.Errorf("Groups of a new backend = %v; want none", g)
	}
	b.Close()
}

// Reads never cross a segment boundary and return exactly the stored items,
// with capacity clipped so that appending to a result cannot touch storage.
func TestAppendReadAcrossSegments(t *testing.T) {
	_, logs := openLogs[int](t, 1, memory.SegmentSize(3))
	l := logs[0]
	mustAppend(t, l, seq(0, 2), 0)  // fills 0,1 of segment 0
	mustAppend(t, l, seq(2, 5), 2)  // 2 | 3,4,5 | 6
	mustAppend(t, l, nil, 7)        // empty: nothing changes
	mustAppend(t, l, seq(7, 1), 7)  // 7
	mustAppend(t, l, seq(8, 12), 8) // 8 | 9..11 | 12..14 | 15..17 | 18,19
	if l.Head() != 0 || l.Tail() != 20 {
		t.Fatalf("head %d tail %d; want 0 20", l.Head(), l.Tail())
	}
	for _, tc := range []struct {
		offset int64
		max    int
		want   []int
	}{
		{0, 100, []int{0, 1, 2}},
		{0, 2, []int{0, 1}},
		{2, 100, []int{2}},
		{3, 100, []int{3, 4, 5}},
		{4, 1, []int{4}},
		{8, 100, []int{8}},
		{17, 100, []int{17}},
		{18, 100, []int{18, 19}},
		{19, 5, []int{19}},
	} {
		_, got, err := l.Read(ctx, tc.offset, tc.max, nil)
		if err != nil || !slices.Equal(got, tc.want) || cap(got) != len(got) {
			t.Errorf("Read(%d, %d) = %v (cap %d), %v; want %v", tc.offset, tc.max, got, cap(got), err, tc.want)
		}
	}
	// Every offset is readable, one at a time, with its own value.
	for o := range int64(20) {
		_, got, err := l.Read(ctx, o, 1, nil)
		if err != nil || len(got) != 1 || got[0] != int(o) {
			t.Fatalf("Read(%d, 1) = %v, %v", o, got, err)
		}
	}
	// A Read aliases storage: no copy and no allocation.
	if a := testing.AllocsPerRun(100, func() { _, _, _ = l.Read(ctx, 3, 3, nil) }); a != 0 {
		t.Errorf("Read allocates %v times; want 0", a)
	}
}

func TestReadOutOfRange(t *testing.T) {
	_, logs := openLogs[int](t, 2, memory.SegmentSize(4))
	l := logs[1]
	mustAppend(t, l, seq(0, 10), 0)
	if err := l.Release(5); err != nil {
		t.Fatal(err)
	}
	for _, o := range []int64{-1, 0, 4, 10, 11} {
		_, _, err := l.Read(ctx, o, 1, nil)
		var oe *memory.OffsetError
		if !errors.As(err, &oe) || !errors.Is(err, isb.ErrOutOfRange) ||
			oe.Offset != o || oe.Head != 5 || oe.Tail != 10 || oe.Op != "read" || oe.Partition != 1 || oe.Topic != "t" {
			t.Errorf("Read(%d) error = %#v; want OffsetError{read %d head 5 tail 10 partition 1}", o, err, o)
		}
	}
	_, _, err := l.Read(ctx, 4, 1, nil)
	if want := `memory: topic "t" partition 1: read at offset 4: the log holds [5, 10)`; err == nil || err.Error() != want {
		t.Errorf("Read(4) error text = %v; want %q", err, want)
	}
	if _, _, err := l.Read(ctx, 5, 0, nil); !errors.Is(err, memory.ErrReadSize) {
		t.Errorf("Read(5, 0) error = %v; want ErrReadSize", err)
	}
	if _, got, err := l.Read(ctx, 5, 10, nil); err != nil || !slices.Equal(got, []int{5, 6, 7}) {
		t.Errorf("Read(5, 10) = %v, %v; want [5 6 7]", got, err)
	}
}

func TestReleaseAndHead(t *testing.T) {
	_, logs := openLogs[int](t, 1, memory.SegmentSize(4))
	l := logs[0]
	mustAppend(t, l, seq(0, 6), 0)
	for _, tc := range []struct {
		release int64
		ok      bool
		head    int64
	}{
		{3, true, 3},
		{2, true, 3}, // never backwards
		{3, true, 3}, // idempotent
		{6, true, 6}, // up to the tail
		{7, false, 6},
		{-1, false, 6},
	} {
		err := l.Release(tc.release)
		if (err == nil) != tc.ok || l.Head() != tc.head {
			t.Errorf("Release(%d) = %v, head %d; want ok=%v head %d", tc.release, err, l.Head(), tc.ok, tc.head)
		}
		if !tc.ok && !errors.Is(err, isb.ErrOutOfRange) {
			t.Errorf("Release(%d) error = %v; want isb.ErrOutOfRange", tc.release, err)
		}
	}
	// A group that never committed starts at the head: past every released item.
	if off, ok := committed(t, l, "late"); ok || off != 6 {
		t.Errorf("Committed(late) = %d, %v; want 6, false", off, ok)
	}
	// The log keeps its offsets after a release.
	mustAppend(t, l, seq(6, 3), 6)
	if _, got, err := l.Read(ctx, 6, 10, nil); err != nil || !slices.Equal(got, []int{6, 7}) {
		t.Errorf("Read(6) = %v, %v; want [6 7]", got, err)
	}
}

func TestCommits(t *testing.T) {
	b, logs := openLogs[int](t, 2)
	mustAppend(t, logs[0], seq(0, 10), 0)
	mustAppend(t, logs[1], seq(0, 4), 0)
	if off, ok := committed(t, logs[0], "a"); ok || off != 0 {
		t.Errorf("Committed(a) before any commit = %d, %v; want 0, false", off, ok)
	}
	steps := []struct {
		p      int
		group  string
		offset int64
		want   int64 // commit afterwards; -1: the call fails
	}{
		{0, "b", 0, 0}, // offset 0 is a commit too: the group becomes known
		{0, "a", 5, 5},
		{0, "a", 3, 5}, // never backwards
		{0, "a", 5, 5}, // idempotent
		{0, "a", 10, 10},
		{0, "a", 11, -1},
		{0, "a", -1, -1},
		{1, "c", 4, 4},
	}
	for _, s := range steps {
		err := logs[s.p].Commit(ctx, s.group, s.offset)
		if s.want < 0 {
			var oe *memory.OffsetError
			if !errors.As(err, &oe) || oe.Op != "commit" || oe.Offset != s.offset {
				t.Errorf("Commit(%s, %d) on %d = %v; want an OffsetError", s.group, s.offset, s.p, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Commit(%s, %d) on %d: %v", s.group, s.offset, s.p, err)
		}
		if off, ok := committed(t, logs[s.p], s.group); !ok || off != s.want {
			t.Errorf("after Commit(%s, %d) on %d: Committed = %d, %v; want %d, true", s.group, s.offset, s.p, off, ok, s.want)
		}
	}
	if off, ok := committed(t, logs[1], "a"); ok || off != 0 {
		t.Errorf("Committed(a) on partition 1 = %d, %v; want 0, false", off, ok)
	}
	if g := groupsOf(t, b); !slices.Equal(g, []string{"a", "b", "c"}) {
		t.Errorf("Groups = %v; want [a b c]", g)
	}
}

func TestClosed(t *testing.T) {
	b, logs := openLogs[int](t, 1)
	l := logs[0]
	mustAppend(t, l, seq(0, 3), 0)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := l.Append([]int{1}); !errors.Is(err, isb.ErrClosed) {
		t.Errorf("Append after Close = %v; want ErrClosed", err)
	}
	if _, _, err := l.Read(ctx, 0, 1, nil); !errors.Is(err, isb.ErrClosed) {
		t.Errorf("Read after Close = %v; want ErrClosed", err)
	}
	if err := l.Commit(ctx, "g", 1); !errors.Is(err, isb.ErrClosed) {
		t.Errorf("Commit after Close = %v; want ErrClosed", err)
	}
	if err := l.Release(1); !errors.Is(err, isb.ErrClosed) {
		t.Errorf("Release after Close = %v; want ErrClosed", err)
	}
	if _, err := b.Open("t", 1); !errors.Is(err, memory.ErrOpened) {
		t.Errorf("Open after Close = %v; want ErrOpened", err)
	}
}

func TestPartitionOutOfRangePanics(t *testing.T) {
	b, _ := openLogs[int](t, 2)
	for _, p := range []int{-1, 2} {
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("Partition(%d) did not panic", p)
				}
			}()
			b.Partition(p)
		}()
	}
}

// A writer that keeps pace with its consumers reuses released segments: the
// steady state allocates nothing, and a burst's segments beyond the free
// list's bound are given back to the garbage collector.
func TestRecyclingSteadyStateAllocatesNothing(t *testing.T) {
	_, logs := openLogs[int](t, 1, memory.SegmentSize(8), memory.MaxFreeSegments(2))
	l := logs[0]
	batch := seq(0, 5)
	step := func() {
		first := appendFirst(t, l, batch)
		if err := l.Release(first + int64(len(batch))); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 { // warm up: the first segments are allocated here
		step()
	}
	if a := testing.AllocsPerRun(1000, step); a != 0 {
		t.Errorf("Append+Release in steady state allocates %v times per run; want 0", a)
	}
	// Items keep their offsets and values through recycling.
	first := appendFirst(t, l, batch)
	for o := first; o < l.Tail(); {
		_, got, err := l.Read(ctx, o, 5, nil)
		if err != nil || len(got) == 0 || got[0] != int(o-first) {
			t.Fatalf("Read(%d) = %v, %v; want %d first", o, got, err, o-first)
		}
		o += int64(len(got))
	}
}

// A recycled segment is cleared, so the garbage collector can reclaim what
// its items pointed to, and a released offset can no longer be read.
func TestRecycledSegmentsAreCleared(t *testing.T) {
	_, logs := openLogs[*int](t, 1, memory.SegmentSize(2), memory.MaxFreeSegments(1))
	l := logs[0]
	v := [6]int{0, 1, 2, 3, 4, 5}
	mustAppend(t, l, []*int{&v[0], &v[1], &v[2], &v[3]}, 0) // segments 0 and 1
	_, held, err := l.Read(ctx, 0, 2, nil)
	if err != nil || len(held) != 2 {
		t.Fatalf("Read(0) = %v, %v", held, err)
	}
	if err := l.Release(4); err != nil {
		t.Fatal(err)
	}
	// The next segment recycles segment 0 (to the free list, cleared: the
	// slice read before the release now sees nil) and drops segment 1
	// (over the bound), then reuses segment 0's storage for offsets 4..5.
	mustAppend(t, l, []*int{&v[4]}, 4)
	if held[0] != &v[4] || held[1] != nil {
		t.Errorf("segment 0 after recycling holds %v, %v; want &v[4], nil (reused and cleared)", held[0], held[1])
	}
	if _, _, err := l.Read(ctx, 0, 1, nil); !errors.Is(err, isb.ErrOutOfRange) {
		t.Errorf("Read of a released offset = %v; want isb.ErrOutOfRange", err)
	}
	if _, got, err := l.Read(ctx, 4, 2, nil); err != nil || len(got) != 1 || got[0] != &v[4] {
		t.Errorf("Read(4) = %v, %v; want [&v[4]]", got, err)
	}
}

// Many live segments (a lagging consumer) grow the ring; every offset stays
// readable through the growth, and the segments are recycled afterwards.
func TestManySegmentsThenDrain(t *testing.T) {
	_, logs := openLogs[int](t, 1, memory.SegmentSize(2), memory.MaxFreeSegments(3))
	l := logs[0]
	const n = 1001
	for i := 0; i < n; i += 7 {
		mustAppend(t, l, seq(i, min(7, n-i)), int64(i))
	}
	for o := int64(0); o < n; {
		_, got, err := l.Read(ctx, o, 5, nil)
		if err != nil || len(got) == 0 || len(got) > 2 {
			t.Fatalf("Read(%d) = %v, %v", o, got, err)
		}
		for i, v := range got {
			if v != int(o)+i {
				t.Fatalf("Read(%d)[%d] = %d; want %d", o, i, v, int(o)+i)
			}
		}
		o += int64(len(got))
	}
	if err := l.Release(n); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, seq(n, 2), n)
	if _, got, err := l.Read(ctx, n, 5, nil); err != nil || !slices.Equal(got, []int{n}) {
		t.Errorf("Read(%d) = %v, %v; want [%d] (segment boundary after it)", n, got, err, n)
	}
	if a := testing.AllocsPerRun(100, func() {
		first := appendFirst(t, l, []int{1, 2})
		_ = l.Release(first + 2)
	}); a != 0 {
		t.Errorf("after draining, Append+Release allocates %v times; want 0", a)
	}
}

// One writer and several groups of readers run concurrently (this is the
// test that -race checks): each reader sees every item exactly once, in
// order, with the value written; the head follows the slowest group, so
// segments are recycled under the readers' feet without ever being visible
// to them.
func TestConcurrentWriterReaders(t *testing.T) {
	const (
		items   = 50000
		readers = 3
	)
	b, logs := openLogs[int](t, 1, memory.SegmentSize(7), memory.MaxFreeSegments(2))
	l := logs[0]
	groups := make([]string, readers)
	for i := range groups {
		groups[i] = fmt.Sprintf("g%d", i)
		if err := l.Commit(ctx, groups[i], 0); err != nil { // known before any release
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var failed atomic.Bool
	wg.Go(func() {
		for i := 0; i < items; {
			n := min(1+i%13, items-i)
			last, err := waitWrite(l.Append(seq(i, n)))
			if err != nil || last != int64(i+n-1) {
				t.Errorf("Append of %d at %d = last %d, %v; want last %d", n, i, last, err, i+n-1)
				failed.Store(true)
				return
			}
			i += n
		}
	})
	for r := range readers {
		wg.Go(func() {
			next := int64(0)
			for next < items && !failed.Load() {
				if next >= l.Tail() {
					runtime.Gosched() // the writer is behind
					continue
				}
				_, got, err := l.Read(ctx, next, 1+r*4, nil)
				if err != nil {
					t.Errorf("reader %d: Read(%d): %v", r, next, err)
					failed.Store(true)
					return
				}
				for i, v := range got {
					if v != int(next)+i {
						t.Errorf("reader %d: offset %d holds %d", r, int(next)+i, v)
						failed.Store(true)
						return
					}
				}
				next += int64(len(got))
				if err := l.Commit(ctx, groups[r], next); err != nil {
					t.Errorf("reader %d: Commit(%d): %v", r, next, err)
				}
				// Release what every group has committed, as the topic does.
				low := next
				for _, g := range groups {
					if c, _ := committed(t, l, g); c < low {
						low = c
					}
				}
				if err := l.Release(low); err != nil {
					t.Errorf("reader %d: Release(%d): %v", r, low, err)
				}
			}
		})
	}
	wg.Wait()
	if l.Head() != items || l.Tail() != items {
		t.Errorf("head %d tail %d; want %d %d", l.Head(), l.Tail(), items, items)
	}
	if g := groupsOf(t, b); !slices.Equal(g, groups) {
		t.Errorf("Groups = %v; want %v", g, groups)
	}
}

// TestConcurrentAppenders: Log serializes its own appends (the topic calls
// it without a lock), so appenders mixing AppendOne and Append on one log,
// across segment boundaries, store every item exactly once, each
// appender's items in its order, at the offsets the calls returned.
func TestConcurrentAppenders(t *testing.T) {
	const (
		appenders = 6
		each      = 3000
	)
	_, logs := openLogs[int](t, 1, memory.SegmentSize(16))
	l := logs[0]
	var wg sync.WaitGroup
	at := make([][]int64, appenders) // at[a][i]: the offset of appender a's item i
	for a := range appenders {
		at[a] = make([]int64, each)
		wg.Go(func() {
			for i := 0; i < each; {
				v := a*each + i
				if i%3 == 2 && i+4 <= each { // every third call a batch of 4
					last, err := waitWrite(l.Append(seq(v, 4)))
					if err != nil {
						t.Error(err)
						return
					}
					for k := range 4 {
						at[a][i+k] = last - 3 + int64(k)
					}
					i += 4
					continue
				}
				off, err := waitWrite(l.AppendOne(v))
				if err != nil {
					t.Error(err)
					return
				}
				at[a][i] = off
				i++
			}
		})
	}
	wg.Wait()
	if l.Tail() != appenders*each {
		t.Fatalf("tail %d; want %d", l.Tail(), appenders*each)
	}
	for a := range appenders {
		for i, off := range at[a] {
			_, got, err := l.Read(ctx, off, 1, nil)
			if err != nil || got[0] != a*each+i {
				t.Fatalf("appender %d item %d at offset %d: Read = %v, %v", a, i, off, got, err)
			}
			if i > 0 && off <= at[a][i-1] {
				t.Fatalf("appender %d: item %d at offset %d, not after item %d at %d", a, i, off, i-1, at[a][i-1])
			}
		}
	}
}

// TestSeal: a sealed log fails every append with ErrClosed and keeps its
// tail, while reads and commits go on until the backend closes.
func TestSeal(t *testing.T) {
	_, logs := openLogs[int](t, 1)
	l := logs[0]
	mustAppend(t, l, seq(0, 3), 0)
	l.Seal()
	l.Seal() // idempotent
	if _, err := l.AppendOne(9); !errors.Is(err, isb.ErrClosed) {
		t.Errorf("AppendOne after Seal = %v; want ErrClosed", err)
	}
	if _, err := l.Append([]int{9}); !errors.Is(err, isb.ErrClosed) {
		t.Errorf("Append after Seal = %v; want ErrClosed", err)
	}
	if l.Tail() != 3 {
		t.Errorf("tail after Seal %d; want 3", l.Tail())
	}
	if _, got, err := l.Read(ctx, 0, 5, nil); err != nil || !slices.Equal(got, seq(0, 3)) {
		t.Errorf("Read after Seal = %v, %v; want [0 1 2]", got, err)
	}
	if err := l.Commit(ctx, "g", 3); err != nil {
		t.Errorf("Commit after Seal: %v", err)
	}
}
