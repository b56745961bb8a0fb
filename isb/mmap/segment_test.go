package mmap

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A failed mapping is reported with the package prefix and the file, so a
// caller several layers up can tell which segment could not be mapped.
func TestMapFileErrorNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seg")
	if err := os.WriteFile(path, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	// Read-only descriptor: a shared writable mapping is refused (EACCES),
	// also for root.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := mapFile(f, 4096)
	if err == nil {
		t.Fatalf("mapped %d bytes through a read-only descriptor", len(data))
	}
	if want := "mmap: map 4096 bytes of " + path + ": "; !strings.HasPrefix(err.Error(), want) || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("err = %q, want it to start with %q and match fs.ErrPermission", err, want)
	}
}

func TestSyncDirErrorNamesDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	err := syncDir(dir)
	if want := "mmap: fsync directory " + dir + ": "; err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want it to start with %q and match fs.ErrNotExist", err, want)
	}
}
