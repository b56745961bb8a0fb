package mmap

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/runnel-dev/runnel/internal/crashtest"
	"github.com/runnel-dev/runnel/isb"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The crash and lock tests re-execute this binary as a child.
	if crashtest.RunChild(children) {
		return
	}
	goleak.VerifyTestMain(m)
}

const testTopic = "t"

// open opens a backend of strings (JSON) under dir with small segments.
func open(t testing.TB, dir string, parts int, opts ...Option) *Backend[string] {
	t.Helper()
	b, err := openErr(dir, parts, opts...)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func openErr(dir string, parts int, opts ...Option) (*Backend[string], error) {
	b, err := New[string](dir, append([]Option{SegmentSize(MinSegmentSize)}, opts...)...)
	if err != nil {
		return nil, err
	}
	if _, err := b.Open(testTopic, parts); err != nil {
		return nil, err
	}
	return b, nil
}

// item is the i-th test item: its length varies so records differ in size.
func item(i int) string { return fmt.Sprintf("item-%d-%s", i, "xxxxxxxxxxxxxxxxxxxx"[:i%17]) }

// appendItems appends items from..to-1 in batches of batch.
func appendItems(t testing.TB, l isb.Log[string], from, to, batch int) {
	t.Helper()
	for i := from; i < to; i += batch {
		var items []string
		for j := i; j < min(i+batch, to); j++ {
			items = append(items, item(j))
		}
		if first := appendSync(t, l, items); first != int64(i) {
			t.Fatalf("append of item %d returned offset %d", i, first)
		}
	}
}

// bg is the context of the calls that take one; local storage ignores it.
var bg = context.Background()

// appendSync appends items, waits the Write and returns the offset of the
// first item (the Write reports the last).
func appendSync[T any](t testing.TB, l isb.Log[T], items []T) (first int64) {
	t.Helper()
	last, err := waitWrite(l.Append(items))
	if err != nil {
		t.Fatalf("append of %d items: %v", len(items), err)
	}
	return last - int64(len(items)) + 1
}

// waitWrite waits the Write of an Append or AppendOne and returns the
// offset of its last item; it takes no t, so goroutines use it.
func waitWrite(w isb.Write, err error) (last int64, _ error) {
	if err != nil {
		return -1, err
	}
	return w.Wait(bg)
}

// committed is Log.Committed, which never fails on mmap storage (commits
// are recovered at Open and kept in memory).
func committed[T any](t testing.TB, l isb.Log[T], group string) (int64, bool) {
	t.Helper()
	off, ok, err := l.Committed(group)
	if err != nil {
		t.Errorf("Committed(%s): %v", group, err)
	}
	return off, ok
}

// groupsOf is Backend.Groups, which never fails on mmap storage.
func groupsOf[T any](t testing.TB, b *Backend[T]) []string {
	t.Helper()
	g, err := b.Groups()
	if err != nil {
		t.Errorf("Groups: %v", err)
	}
	return g
}

// errOf is the error of Open.
func errOf(_ isb.Caps, err error) error { return err }

// readAll reads [Head, Tail) and fails on any error.
func readAll(t testing.TB, l isb.Log[string]) []string {
	t.Helper()
	got, err := readUntilError(l)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return got
}

// readUntilError reads from Head and stops at Tail or at the first error.
func readUntilError(l isb.Log[string]) ([]string, error) {
	var got []string
	buf := make([]string, 7)
	for off := l.Head(); off < l.Tail(); {
		_, items, err := l.Read(bg, off, len(buf), buf)
		if err != nil {
			return got, err
		}
		if len(items) == 0 {
			return got, fmt.Errorf("empty read at %d", off)
		}
		got = append(got, items...)
		off += int64(len(items))
	}
	return got, nil
}

// checkItems asserts got are items from..from+len(want)-1, exactly.
func checkItems(t testing.TB, got []string, from, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("got %d items, want %d", len(got), n)
	}
	for i, g := range got {
		if want := item(from + i); g != want {
			t.Fatalf("item at %d = %q, want %q", from+i, g, want)
		}
	}
}

func partDir(dir string, p int) string {
	return filepath.Join(dir, testTopic, partitionDirName(p))
}

// snapshot copies the topic directory of an open backend, as a crash of
// the process would leave it (the page cache holds what the mapping wrote).
func snapshot(t testing.TB, dir string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// segFiles lists the segment files of partition p, ascending.
func segFiles(t testing.TB, dir string, p int) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(partDir(dir, p), "*"+segmentExt))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func wantCorrupt(t testing.TB, err error, file string) *CorruptError {
	t.Helper()
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, isb.ErrCorrupt) {
		t.Fatalf("err = %v, want a *CorruptError", err)
	}
	if file != "" && filepath.Base(ce.File) != file {
		t.Fatalf("corrupt file %s, want %s (%v)", ce.File, file, err)
	}
	return ce
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}
