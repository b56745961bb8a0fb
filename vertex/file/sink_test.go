package file_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/vertex/file"
)

// msgsOf makes messages with the given values.
func msgsOf(vals ...string) []vertex.Message[[]byte] {
	out := make([]vertex.Message[[]byte], len(vals))
	for i, v := range vals {
		out[i] = vertex.Message[[]byte]{ID: fmt.Sprint(i), Value: []byte(v)}
	}
	return out
}

// dirContent lists dir as "name: content" lines, sorted by name.
func dirContent(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s: %q", e.Name(), b))
	}
	slices.Sort(out)
	return out
}

// newSink makes a validated sink.
func newSink(t *testing.T, dir string, opts ...file.SinkOption) *file.Sink {
	t.Helper()
	s := file.NewSink(dir, opts...)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// writeOK writes msgs and requires every one delivered.
func writeOK(t *testing.T, s *file.Sink, vals ...string) {
	t.Helper()
	res, err := s.Write(context.Background(), msgsOf(vals...))
	if err != nil || res != nil {
		t.Fatalf("write %q: %v %v", vals, res, err)
	}
}

// TestSinkRotatesByLines: RotateLines files hold that many lines, the
// file being written is named .open, and Close gives it its final name.
func TestSinkRotatesByLines(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out", "nested") // created by the sink
	s := newSink(t, dir, file.RotateLines(3))
	writeOK(t, s, "1", "2", "3", "4")
	writeOK(t, s, "5", "6", "7", "8")
	want := []string{`part-0000000001.txt: "1\n2\n3\n"`, `part-0000000002.txt: "4\n5\n6\n"`, `part-0000000003.txt.open: "7\n8\n"`}
	if got := dirContent(t, dir); !slices.Equal(got, want) {
		t.Fatalf("before Close:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	want[2] = `part-0000000003.txt: "7\n8\n"`
	if got := dirContent(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after Close:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := s.Write(context.Background(), msgsOf("late")); err == nil {
		t.Fatal("a write after Close succeeded")
	}
}

// TestSinkRotatesByBytes: a file takes lines while they fit RotateBytes; a
// longer line gets a file of its own; with RotateLines too, whichever
// comes first.
func TestSinkRotatesByBytes(t *testing.T) {
	dir := t.TempDir()
	s := newSink(t, dir, file.RotateBytes(10), file.RotateLines(3), file.Names("events-", ".jsonl"))
	writeOK(t, s, "aaaa", "bbbb", "cc", "a-line-of-twenty-b", "d", "e", "f", "g")
	s.Close()
	want := []string{
		`events-0000000001.jsonl: "aaaa\nbbbb\n"`,
		`events-0000000002.jsonl: "cc\n"`,
		`events-0000000003.jsonl: "a-line-of-twenty-b\n"`,
		`events-0000000004.jsonl: "d\ne\nf\n"`,
		`events-0000000005.jsonl: "g\n"`,
	}
	if got := dirContent(t, dir); !slices.Equal(got, want) {
		t.Fatalf("files:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSinkRestartCompletesOpenFiles: a sink started on a directory a
// crashed run left numbers on after its highest file, cuts a torn last
// line off the file left open and renames it, and removes an open file
// with no whole line; other files are left alone.
func TestSinkRestartCompletesOpenFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "part-0000000003.txt"), "old\n")
	write(t, filepath.Join(dir, "part-0000000004.txt.open"), "x\ny\ntor")
	write(t, filepath.Join(dir, "part-0000000005.txt.open"), "torn")
	write(t, filepath.Join(dir, "notes.txt"), "mine\n")
	s := newSink(t, dir)
	writeOK(t, s, "new")
	want := []string{
		`notes.txt: "mine\n"`,
		`part-0000000003.txt: "old\n"`,
		`part-0000000004.txt: "x\ny\n"`,
		`part-0000000006.txt.open: "new\n"`,
	}
	if got := dirContent(t, dir); !slices.Equal(got, want) {
		t.Fatalf("files:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSinkLocksItsDirectory: a second sink on the directory fails its
// writes with ErrLocked until the first is closed.
func TestSinkLocksItsDirectory(t *testing.T) {
	dir := t.TempDir()
	first := newSink(t, dir)
	writeOK(t, first, "1")
	second := newSink(t, dir)
	if _, err := second.Write(context.Background(), msgsOf("2")); !errors.Is(err, file.ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second sink's write: %v, want ErrLocked naming %s", err, dir)
	}
	first.Close()
	third := newSink(t, dir)
	writeOK(t, third, "3")
	third.Close()
	want := []string{`part-0000000001.txt: "1\n"`, `part-0000000002.txt: "3\n"`}
	if got := dirContent(t, dir); !slices.Equal(got, want) {
		t.Fatalf("files %q, want %q", got, want)
	}
}

// TestSinkRefusesNewlines: a value with a newline is answered
// ResultFallback and not written; the others are.
func TestSinkRefusesNewlines(t *testing.T) {
	dir := t.TempDir()
	s := newSink(t, dir)
	res, err := s.Write(context.Background(), msgsOf("a", "b\nc", "d"))
	if err != nil || fmt.Sprint(res) != "[ok fallback ok]" {
		t.Fatalf("write: %v %v, want [ok fallback ok]", res, err)
	}
	s.Close()
	if got := dirContent(t, dir); fmt.Sprint(got) != `[part-0000000001.txt: "a\nd\n"]` {
		t.Fatalf("files %q", got)
	}
}

// TestSinkValidate: bad options are refused, naming them.
func TestSinkValidate(t *testing.T) {
	for _, c := range []struct {
		sink   *file.Sink
		option string
	}{
		{file.NewSink(""), "NewSink"},
		{file.NewSink("d", file.RotateBytes(-1)), "RotateBytes"},
		{file.NewSink("d", file.RotateLines(-1)), "RotateLines"},
		{file.NewSink("d", file.RotateBytes(0)), "RotateBytes"},
		{file.NewSink("d", file.Names("a/b", "")), "Names"},
		{file.NewSink("d", file.Names("p", ".txt.open")), "Names"},
	} {
		var oe *vertex.OptionError
		if err := c.sink.Validate(); !errors.As(err, &oe) || oe.Option != c.option || oe.Package != "file" {
			t.Errorf("Validate: %v, want an OptionError of file naming %s", err, c.option)
		}
	}
}

// TestSinkConcurrentWriters: Writes from several goroutines, as a vertex's
// workers make them, share flushes and rotations: every line is in the
// files once, whole, the files hold RotateLines lines but the last.
func TestSinkConcurrentWriters(t *testing.T) {
	const writers, writes, per, rotate = 8, 100, 5, 37
	dir := t.TempDir()
	s := newSink(t, dir, file.RotateLines(rotate))
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range writes {
				vals := make([]string, per)
				for k := range vals {
					vals[k] = fmt.Sprintf("w%d-%d-%d", w, i, k)
				}
				if res, err := s.Write(context.Background(), msgsOf(vals...)); err != nil || res != nil {
					t.Errorf("write: %v %v", res, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	seen := map[string]int{}
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if want := rotate; i < len(files)-1 && len(lines) != want || strings.HasSuffix(f, ".open") {
			t.Fatalf("%s: %d lines, want %d (and no file left open)", f, len(lines), want)
		}
		for _, l := range lines {
			seen[l]++
		}
	}
	if len(seen) != writers*writes*per {
		t.Fatalf("%d distinct lines, want %d", len(seen), writers*writes*per)
	}
	for l, c := range seen {
		if c != 1 {
			t.Fatalf("line %q %d times", l, c)
		}
	}
}
