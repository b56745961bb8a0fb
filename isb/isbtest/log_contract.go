package isbtest

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/runnel-dev/runnel/isb"
)

// LogContract checks the contract of isb.Backend and isb.Log that the
// topic relies on, below any topic: contiguous offsets per partition,
// reads of at least one and at most max items in order, appends that do
// not keep the caller's slice, commits and their absence, release below
// the commits, group deletion, concurrent appends where the storage
// declares isb.Caps.Concurrent, and for durable storage all of it again
// after a reopen.
func LogContract(t *testing.T, f StorageFactory) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, Storage)
	}{
		{"EmptyPartitions", logEmpty},
		{"ContiguousOffsets", logContiguous},
		{"ReadBounds", logReadBounds},
		{"AppendDoesNotKeepItems", logAppendCopies},
		{"CommitsAndGroups", logCommits},
		{"ReleaseKeepsTail", logRelease},
		{"ConcurrentAppend", logConcurrentAppend},
		{"Reopen", logReopen},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := f(t)
			suite{sparse: s.Sparse}.mark(t)
			c.run(t, s)
		})
	}
}

// closeBackend closes b, failing t on an error.
func closeBackend(t *testing.T, b isb.Backend[Item]) {
	t.Helper()
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// appendAt appends items to l, waits for the write and checks they start
// at first (on sparse storage: at or past first, and past the tail before
// the append), and that the tail is after the last.
func appendAt(t *testing.T, l isb.Log[Item], first int64, items []Item) {
	t.Helper()
	before := l.Tail()
	w, err := l.Append(items)
	if err != nil {
		t.Fatalf("Append of %d items: %v", len(items), err)
	}
	want := first + int64(len(items)) - 1
	if last := w.Last(); last != -1 && !atOffset(t, last, want) {
		t.Fatalf("Append of %d items: Write.Last before Wait = %d, want %d or -1 (not known yet)", len(items), last, want)
	}
	got, err := w.Wait(context.Background())
	if err != nil || !atOffset(t, got, want) || got < before+int64(len(items))-1 {
		t.Fatalf("Append of %d items: Wait = %d, %v; want last offset %d", len(items), got, err, want)
	}
	if w.Pending() {
		if again := w.Last(); again != -1 && again != got {
			t.Fatalf("Write.Last = %d, want %d", again, got)
		}
	}
	if tail := l.Tail(); tail != got+1 {
		t.Fatalf("Tail after Append = %d, want %d", tail, got+1)
	}
}

// readAll reads [from, Tail) in batches of at most max, checking each
// batch's size, and returns the items (copied).
func readAll(t *testing.T, l isb.Log[Item], from int64, max int) []Item {
	t.Helper()
	buf := make([]Item, max)
	var got []Item
	for off := from; off < l.Tail(); {
		first, items, err := l.Read(context.Background(), off, max, buf)
		if err != nil {
			t.Fatalf("Read(%d, %d): %v", off, max, err)
		}
		if len(items) < 1 || len(items) > max || first < off {
			t.Fatalf("Read(%d, %d) returned %d items at %d, want 1 to %d at or after %d", off, max, len(items), first, max, off)
		}
		got = append(got, items...)
		off = first + int64(len(items))
	}
	return got
}

func logEmpty(t *testing.T, s Storage) {
	b := s.open(t, "log", 3)
	defer closeBackend(t, b)
	for p := range 3 {
		l := b.Partition(p)
		if h, tl := l.Head(), l.Tail(); h != 0 || tl != 0 {
			t.Fatalf("partition %d of new storage: head %d tail %d, want 0 and 0", p, h, tl)
		}
		if off, ok, err := l.Committed("g"); err != nil || ok || off != l.Head() {
			t.Fatalf("Committed of an unknown group = %d, %v; want the head and false", off, ok)
		}
	}
	if gs, err := b.Groups(); err != nil || len(gs) != 0 {
		t.Fatalf("Groups of new storage = %v, want none", gs)
	}
}

func logContiguous(t *testing.T, s Storage) {
	b := s.open(t, "log", 2)
	defer closeBackend(t, b)
	l0, l1 := b.Partition(0), b.Partition(1)
	appendAt(t, l0, 0, seqs(0, 0, 3))
	appendAt(t, l0, 3, seqs(0, 3, 2))
	appendAt(t, l1, 0, seqs(1, 0, 1)) // partitions count offsets apart
	appendAt(t, l0, 5, seqs(0, 5, 1))
	if got := readAll(t, l0, 0, 100); !slices.Equal(got, seqs(0, 0, 6)) {
		t.Fatalf("partition 0 holds %v, want %v", got, seqs(0, 0, 6))
	}
	if got := readAll(t, l1, 0, 100); !slices.Equal(got, seqs(1, 0, 1)) {
		t.Fatalf("partition 1 holds %v, want %v", got, seqs(1, 0, 1))
	}
}

func logReadBounds(t *testing.T, s Storage) {
	b := s.open(t, "log", 1)
	defer closeBackend(t, b)
	l := b.Partition(0)
	appendAt(t, l, 0, seqs(0, 0, 10))
	for _, max := range []int{1, 3, 10, 64} {
		if got := readAll(t, l, 0, max); !slices.Equal(got, seqs(0, 0, 10)) {
			t.Fatalf("reading by %d: %v", max, got)
		}
	}
	if got := readAll(t, l, 7, 2); !slices.Equal(got, seqs(0, 7, 3)) {
		t.Fatalf("reading from offset 7: %v, want %v", got, seqs(0, 7, 3))
	}
}

func logAppendCopies(t *testing.T, s Storage) {
	b := s.open(t, "log", 1)
	defer closeBackend(t, b)
	l := b.Partition(0)
	items := seqs(0, 0, 3)
	appendAt(t, l, 0, items)
	for i := range items {
		items[i] = Item{Producer: 9, Seq: 99}
	}
	if got := readAll(t, l, 0, 10); !slices.Equal(got, seqs(0, 0, 3)) {
		t.Fatalf("after the caller reused its slice the log holds %v, want %v", got, seqs(0, 0, 3))
	}
}

func logCommits(t *testing.T, s Storage) {
	b := s.open(t, "log", 2)
	defer closeBackend(t, b)
	l0, l1 := b.Partition(0), b.Partition(1)
	appendAt(t, l0, 0, seqs(0, 0, 5))
	for _, c := range []struct {
		l     isb.Log[Item]
		group string
		off   int64
	}{{l0, "a", 2}, {l0, "a", 4}, {l0, "b", 1}, {l1, "b", 0}} {
		if err := c.l.Commit(context.Background(), c.group, c.off); err != nil {
			t.Fatalf("Commit(%q, %d): %v", c.group, c.off, err)
		}
	}
	if off, ok, err := l0.Committed("a"); err != nil || !ok || off != 4 {
		t.Fatalf("Committed(a) = %d, %v; want 4, true (the last commit)", off, ok)
	}
	if off, ok, err := l1.Committed("a"); err != nil || ok || off != l1.Head() {
		t.Fatalf("Committed(a) of a partition it never committed = %d, %v; want the head and false", off, ok)
	}
	if gs, err := b.Groups(); err != nil || !slices.Equal(gs, []string{"a", "b"}) {
		t.Fatalf("Groups = %v, want [a b]", gs)
	}
	if err := b.DeleteGroup("b"); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteGroup("never"); err != nil {
		t.Fatalf("DeleteGroup of a group storage does not hold: %v, want nil", err)
	}
	if off, ok, err := l0.Committed("b"); err != nil || ok || off != l0.Head() {
		t.Fatalf("Committed(b) after DeleteGroup = %d, %v; want the head and false", off, ok)
	}
	if gs, err := b.Groups(); err != nil || !slices.Equal(gs, []string{"a"}) {
		t.Fatalf("Groups after DeleteGroup(b) = %v, want [a]", gs)
	}
}

func logRelease(t *testing.T, s Storage) {
	b := s.open(t, "log", 1)
	defer closeBackend(t, b)
	l := b.Partition(0)
	appendAt(t, l, 0, seqs(0, 0, 8))
	if err := l.Commit(context.Background(), "g", 5); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(5); err != nil {
		t.Fatalf("Release(5): %v", err)
	}
	if h := l.Head(); h < 0 || h > 5 {
		t.Fatalf("head after Release(5) = %d, want 0 to 5", h)
	}
	if got := readAll(t, l, 5, 10); !slices.Equal(got, seqs(0, 5, 3)) {
		t.Fatalf("after Release(5) offsets 5 to 7 hold %v, want %v", got, seqs(0, 5, 3))
	}
	appendAt(t, l, 8, seqs(0, 8, 2))
}

// logConcurrentAppend checks a log of storage that declares
// isb.Caps.Concurrent: appends from several
// goroutines at once get distinct offsets and every item is stored once.
func logConcurrentAppend(t *testing.T, s Storage) {
	b, caps := s.openCaps(t, "log", 1)
	defer closeBackend(t, b)
	if !caps.Concurrent {
		t.Skip("the log serializes no appends of its own: the topic does")
	}
	cl := b.Partition(0)
	const writers, each = 4, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				var wr isb.Write
				var err error
				if i%2 == 0 {
					wr, err = cl.AppendOne(Item{Producer: w, Seq: i})
				} else {
					wr, err = cl.Append([]Item{{Producer: w, Seq: i}})
				}
				if err == nil {
					_, err = wr.Wait(context.Background())
				}
				if err != nil {
					t.Errorf("append: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	got := readAll(t, cl, 0, 64)
	checkExactlyOnce(t, "concurrent appends", got, writers, each)
}

// logReopen checks that durable storage keeps items, commits and group
// deletions across a Close and a new Backend's Open.
func logReopen(t *testing.T, s Storage) {
	if !s.Durable {
		t.Skip("storage does not outlive its Backend")
	}
	b := s.open(t, "log", 2)
	appendAt(t, b.Partition(0), 0, seqs(0, 0, 4))
	appendAt(t, b.Partition(1), 0, seqs(1, 0, 2))
	for _, g := range []string{"kept", "deleted"} {
		if err := b.Partition(0).Commit(context.Background(), g, 3); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.DeleteGroup("deleted"); err != nil {
		t.Fatal(err)
	}
	closeBackend(t, b)

	b = s.open(t, "log", 2)
	defer closeBackend(t, b)
	if got := readAll(t, b.Partition(0), 0, 10); !slices.Equal(got, seqs(0, 0, 4)) {
		t.Fatalf("partition 0 after reopening holds %v, want %v", got, seqs(0, 0, 4))
	}
	if got := readAll(t, b.Partition(1), 0, 10); !slices.Equal(got, seqs(1, 0, 2)) {
		t.Fatalf("partition 1 after reopening holds %v, want %v", got, seqs(1, 0, 2))
	}
	if off, ok, err := b.Partition(0).Committed("kept"); err != nil || !ok || off != 3 {
		t.Fatalf("commit after reopening = %d, %v; want 3, true", off, ok)
	}
	if gs, err := b.Groups(); err != nil || !slices.Equal(gs, []string{"kept"}) {
		t.Fatalf("Groups after reopening = %v, want [kept] (the deleted group stays deleted)", gs)
	}
	appendAt(t, b.Partition(0), 4, seqs(0, 4, 1)) // appends go on at the tail
}
