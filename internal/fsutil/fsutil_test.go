package fsutil_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/internal/fsutil"
)

// TestWriteFileAtomic: a write replaces the content and leaves no
// temporary file; a failed one (the rename fails: the target is a
// non-empty directory, which stops root too) removes its temporary file
// and names the path.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for _, want := range []string{"old", "new"} {
		if err := fsutil.WriteFileAtomic(path, []byte(want)); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	if _, err := os.Stat(path + fsutil.TempSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("temporary file left behind: %v", err)
	}
	target := filepath.Join(dir, "d")
	if err := os.MkdirAll(filepath.Join(target, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fsutil.WriteFileAtomic(target, []byte("x")); err == nil || !strings.Contains(err.Error(), target) {
		t.Fatalf("err = %v, want a failure naming %s", err, target)
	}
	if _, err := os.Stat(target + fsutil.TempSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("temporary file left behind after a failed write: %v", err)
	}
}

func TestSyncDirErrorNamesDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	err := fsutil.SyncDir(dir)
	if want := "fsync directory " + dir + ": "; err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want it to start with %q and match fs.ErrNotExist", err, want)
	}
}

// TestMkdirAllSynced: every directory created is reported (its parent is
// fsync'd), outermost first, and an existing one is not created again.
func TestMkdirAllSynced(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "b", "c")
	created, err := fsutil.MkdirAllSynced(dir)
	want := []string{filepath.Join(root, "a"), filepath.Join(root, "a", "b"), dir}
	if err != nil || !slices.Equal(created, want) {
		t.Fatalf("MkdirAllSynced = %q, %v; want %q", created, err, want)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("%s not created: %v", dir, err)
	}
	if created, err := fsutil.MkdirAllSynced(dir); err != nil || len(created) != 0 {
		t.Fatalf("second MkdirAllSynced = %q, %v; want nothing created", created, err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fsutil.MkdirAllSynced(filepath.Join(file, "x")); err == nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("MkdirAllSynced under a file: err = %v, want one naming %s", err, file)
	}
}

// TestLockDir: a second lock of a directory fails with the held error in
// the same process (another open file description), and succeeds once
// the first is closed. (Across processes: the lock tests of isb/mmap and
// wal.)
func TestLockDir(t *testing.T) {
	held, unsupported := errors.New("p: locked"), errors.New("p: unsupported")
	lock := func(dir string) (*os.File, error) { return fsutil.LockDir("p", dir, held, unsupported) }
	dir := t.TempDir()
	f, err := lock(dir)
	if errors.Is(err, unsupported) {
		if want := "p: lock " + dir + ": p: unsupported"; err.Error() != want {
			t.Fatalf("LockDir off linux and darwin: %q, want %q", err, want)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock(dir); !errors.Is(err, held) || err.Error() != "p: locked: "+dir {
		t.Fatalf("second LockDir: %v, want held naming %s", err, dir)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f, err = lock(dir)
	if err != nil {
		t.Fatalf("LockDir after the first was closed: %v", err)
	}
	f.Close()
	if _, err := lock(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "p: ") {
		t.Fatalf("LockDir of a missing directory: %v, want fs.ErrNotExist after the prefix", err)
	}
}

func TestFdatasync(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("x"); err != nil {
		t.Fatal(err)
	}
	if err := fsutil.Fdatasync(f); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		t.Fatal(err)
	}
}

func TestFormatCorruption(t *testing.T) {
	for _, c := range []struct {
		c    fsutil.Corruption
		at   string
		want string
	}{
		{fsutil.Corruptf("seg", 40, "bad %s", "crc"), "", "p: corrupt seg at byte 40: bad crc"},
		{fsutil.Corruptf("seg", -1, "missing"), "", "p: corrupt seg: missing"},
		{fsutil.Corruptf("seg", 40, "bad"), "entry 3", "p: corrupt seg at entry 3 (byte 40): bad"},
		{fsutil.Corruptf("seg", -1, "bad"), "entry 3", "p: corrupt seg at entry 3: bad"},
	} {
		if got := fsutil.FormatCorruption("p", c.c, c.at); got != c.want {
			t.Errorf("FormatCorruption = %q, want %q", got, c.want)
		}
	}
}
