package file_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/vertex/file"
)

// write creates path (and its directory) with content.
func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// appendTo appends content to path.
func appendTo(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// line renders a message as "ID=value".
func line(m vertex.Message[[]byte]) string { return m.ID + "=" + string(m.Value) }

// readAll reads src in batches of n until io.EOF and returns the batches.
func readAll(t *testing.T, src *file.Source, n int) [][]string {
	t.Helper()
	var out [][]string
	for {
		msgs, err := src.Read(context.Background(), n)
		if len(msgs) > 0 {
			var b []string
			for _, m := range msgs {
				b = append(b, line(m))
			}
			out = append(out, b)
		}
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// newSource makes a validated source.
func newSource(t *testing.T, pattern string, opts ...file.SourceOption) *file.Source {
	t.Helper()
	src := file.NewSource(pattern, opts...)
	if err := src.Validate(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// TestSourceReadsFilesInOrder: the lines of every matching file, in path
// order, in batches that stop at a file's end, with their byte ranges as
// IDs; "\r\n" ends a line as "\n" does, a last line without newline is a
// line, an empty line is a line, and files the glob does not match or
// directories it does are not read.
func TestSourceReadsFilesInOrder(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "b.log"), "b1\r\nb2\n\nb4")
	write(t, filepath.Join(dir, "a.log"), "a1\na2\na3\n")
	write(t, filepath.Join(dir, "c.txt"), "not matched\n")
	if err := os.Mkdir(filepath.Join(dir, "d.log"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := newSource(t, filepath.Join(dir, "*.log"))
	got := fmt.Sprint(readAll(t, src, 2))
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	want := fmt.Sprint([][]string{
		{a + ":0-3=a1", a + ":3-6=a2"}, {a + ":6-9=a3"},
		{b + ":0-4=b1", b + ":4-7=b2"}, {b + ":7-8=", b + ":8-10=b4"},
	})
	if got != want {
		t.Fatalf("batches\n%s\nwant\n%s", got, want)
	}
	// Ended: io.EOF again.
	if msgs, err := src.Read(context.Background(), 10); len(msgs) != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("read after the end: %d messages, %v", len(msgs), err)
	}
	path, start, end, err := file.ParseID(b + ":4-7")
	if path != b || start != 4 || end != 7 || err != nil {
		t.Fatalf("ParseID: %q %d %d %v", path, start, end, err)
	}
}

// TestSourceRescansBeforeItEnds: a file that appears, and one that grows,
// while the source reads are read before it ends, in path order in the
// pass after the one that found them.
func TestSourceRescansBeforeItEnds(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.log")
	write(t, a, "a1\n")
	src := newSource(t, filepath.Join(dir, "*.log"))
	msgs, err := src.Read(context.Background(), 10)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("first read: %d, %v", len(msgs), err)
	}
	appendTo(t, a, "a2\n")
	write(t, filepath.Join(dir, "0.log"), "z1\n")
	got := fmt.Sprint(readAll(t, src, 10))
	if want := fmt.Sprint([][]string{{filepath.Join(dir, "0.log") + ":0-3=z1"}, {a + ":3-6=a2"}}); got != want {
		t.Fatalf("batches %s, want %s", got, want)
	}
}

// TestSourceFollow: with Follow the source waits for more instead of
// ending; it reads new files and appended lines, and holds back a last
// line until its newline comes.
func TestSourceFollow(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.log")
	write(t, a, "a1\npart")
	src := newSource(t, filepath.Join(dir, "*.log"), file.Follow(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	next := func() []string {
		t.Helper()
		msgs, err := src.Read(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range msgs {
			out = append(out, line(m))
		}
		return out
	}
	if got := fmt.Sprint(next()); got != "["+a+":0-3=a1]" {
		t.Fatalf("first read %s", got)
	}
	// Nothing complete: a Read waits, and ends with its context.
	short, stop := context.WithTimeout(ctx, 20*time.Millisecond)
	msgs, err := src.Read(short, 10)
	stop()
	if len(msgs) != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read with only a partial line: %d messages, %v", len(msgs), err)
	}
	appendTo(t, a, "ial\n")
	if got := fmt.Sprint(next()); got != "["+a+":3-11=partial]" {
		t.Fatalf("read after the newline %s", got)
	}
	b := filepath.Join(dir, "b.log")
	write(t, b, "b1\n")
	if got := fmt.Sprint(next()); got != "["+b+":0-3=b1]" {
		t.Fatalf("read of a new file %s", got)
	}
}

// TestSourceLineTooLong: a line longer than MaxLineBytes fails the read
// with ErrLineTooLong, naming the file and the line's offset, with or
// without its newline in sight; the lines before it are delivered.
func TestSourceLineTooLong(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"newline.log":   "ok\n" + strings.Repeat("x", 9) + "\nafter\n",
		"nonewline.log": "ok\n" + strings.Repeat("x", 200_000),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			write(t, path, content)
			src := newSource(t, path, file.MaxLineBytes(8))
			msgs, err := src.Read(context.Background(), 10)
			var fe *file.Error
			if !errors.Is(err, file.ErrLineTooLong) || !errors.As(err, &fe) || fe.Path != path || fe.Offset != 3 {
				t.Fatalf("read: %v, want ErrLineTooLong at %s offset 3", err, path)
			}
			if len(msgs) != 1 || string(msgs[0].Value) != "ok" {
				t.Fatalf("read delivered %d messages with the error, want the line before", len(msgs))
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "offset 3") {
				t.Fatalf("error %q does not name the file and the offset", err)
			}
		})
	}
}

// TestSourceLongLinesWithinMax: lines longer than the read buffer, up to
// MaxLineBytes, are read whole.
func TestSourceLongLinesWithinMax(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("y", 300_000)
	path := filepath.Join(dir, "a.log")
	write(t, path, "s\n"+long+"\r\n"+long)
	src := newSource(t, path, file.MaxLineBytes(len(long)))
	var got []string
	for _, b := range readAll(t, src, 10) {
		for _, l := range b {
			id, v, _ := strings.Cut(l, "=")
			got = append(got, fmt.Sprintf("%s %d", id, len(v)))
		}
	}
	want := fmt.Sprint([]string{path + ":0-2 1", path + ":2-300004 300000", path + ":300004-600004 300000"})
	if fmt.Sprint(got) != want {
		t.Fatalf("lines %v, want %s", got, want)
	}
}

// TestSourceValidate: a bad pattern, a bad option and a missing directory
// are refused with errors naming them.
func TestSourceValidate(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		src    *file.Source
		option string // the OptionError's, or "" for an *Error
		want   string
	}{
		{file.NewSource(""), "NewSource", "needs a glob"},
		{file.NewSource(filepath.Join(dir, "[a")), "NewSource", "not a valid glob"},
		{file.NewSource(filepath.Join(dir, "*"), file.Follow(0)), "Follow", "positive"},
		{file.NewSource(filepath.Join(dir, "*"), file.MaxLineBytes(-1)), "MaxLineBytes", "positive"},
		{file.NewSource(filepath.Join(dir, "missing", "*", "x.log")), "", filepath.Join(dir, "missing")},
	} {
		err := c.src.Validate()
		var oe *vertex.OptionError
		var fe *file.Error
		switch {
		case err == nil:
			t.Errorf("%s: no error", c.want)
		case c.option != "" && (!errors.As(err, &oe) || oe.Option != c.option || oe.Package != "file"):
			t.Errorf("%v: want an OptionError of file naming %s", err, c.option)
		case c.option == "" && (!errors.As(err, &fe) || !errors.Is(err, fs.ErrNotExist)):
			t.Errorf("%v: want an *Error wrapping fs.ErrNotExist", err)
		case !strings.Contains(err.Error(), c.want):
			t.Errorf("%v: want it to say %q", err, c.want)
		}
	}
}

// TestSourceUnreadableFile: a file the glob matches that cannot be read
// fails the read with an *Error naming it and the cause: a symbolic link
// that loops (for any user), a file without read permission (unless run
// as root, who reads it anyway).
func TestSourceUnreadableFile(t *testing.T) {
	dir := t.TempDir()
	loop := filepath.Join(dir, "loop.log")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	_, err := newSource(t, filepath.Join(dir, "*.log")).Read(context.Background(), 10)
	var fe *file.Error
	if !errors.As(err, &fe) || fe.Path != loop || !strings.Contains(err.Error(), loop) {
		t.Fatalf("read of a looping link: %v, want an *Error naming %s", err, loop)
	}
	if os.Geteuid() == 0 {
		t.Log("root reads any file: the permission case is not tried")
		return
	}
	os.Remove(loop)
	locked := filepath.Join(dir, "locked.log")
	write(t, locked, "x\n")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	_, err = newSource(t, filepath.Join(dir, "*.log")).Read(context.Background(), 10)
	if !errors.As(err, &fe) || fe.Path != locked || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("read of an unreadable file: %v, want an *Error naming %s wrapping fs.ErrPermission", err, locked)
	}
}
