package wal

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"
)

var (
	ctx  = context.Background()
	base = time.Unix(1_700_000_000, 0)
)

// win returns the fixed window number i, 10s wide.
func win(i int) Window {
	s := base.Add(time.Duration(i) * 10 * time.Second)
	return Window{Start: s, End: s.Add(10 * time.Second)}
}

// msg is entry seq of partition p in window i.
func msg(p int32, seq int64, i int) Entry {
	return Entry{
		Partition: p,
		Offset:    seq,
		EventTime: win(i).Start.Add(time.Duration(seq) * time.Millisecond),
		ID:        fmt.Sprintf("msg-%d-%d", p, seq),
		Keys:      []string{fmt.Sprintf("k%d", seq%3)},
		Windows:   []Window{win(i)},
		Value:     fmt.Appendf(nil, "value-%d-%d", p, seq),
	}
}

func openT(t testing.TB, dir string, opts ...Option) *WAL {
	t.Helper()
	w, err := Open(dir, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return w
}

func closeT(t testing.TB, w *WAL) {
	t.Helper()
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func appendT(t testing.TB, w *WAL, es ...Entry) {
	t.Helper()
	if err := w.Append(ctx, es...); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

func replayAll(t testing.TB, w *WAL) []Entry {
	t.Helper()
	var out []Entry
	for e, err := range w.Replay() {
		if err != nil {
			t.Fatalf("Replay: %v", err)
		}
		e.Value = slices.Clone(e.Value) // valid only until the loop advances
		out = append(out, e)
	}
	return out
}

// sameEntry compares entries by value (times with Equal).
func sameEntry(a, b Entry) bool {
	return a.Partition == b.Partition && a.Offset == b.Offset && a.EventTime.Equal(b.EventTime) && a.ID == b.ID &&
		slices.Equal(a.Keys, b.Keys) && string(a.Value) == string(b.Value) &&
		slices.EqualFunc(a.Windows, b.Windows, func(x, y Window) bool {
			return x.Start.Equal(y.Start) && x.End.Equal(y.End) && x.Session == y.Session
		})
}

func checkEntries(t testing.TB, got, want []Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d", len(got), len(want))
	}
	for i := range got {
		if !sameEntry(got[i], want[i]) {
			t.Fatalf("entry %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// logDirs returns the names in a WAL's directory but its metadata record.
func logDirs(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		if de.Name() != metaFile {
			names = append(names, de.Name())
		}
	}
	return names
}
