package mmap

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCheckpoint(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, producerFile)
	if _, err := readCheckpoint(path, kindProducer); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	want := checkpoint{10, 3, 4096, 4000}
	if err := writeCheckpoint(path, kindProducer, want); err != nil {
		t.Fatal(err)
	}
	if err := writeCheckpoint(path, kindProducer, checkpoint{11, 3, 4120, 4096}); err != nil {
		t.Fatal(err)
	}
	got, err := readCheckpoint(path, kindProducer)
	if err != nil || got != (checkpoint{11, 3, 4120, 4096}) {
		t.Fatalf("read %v, %v", got, err)
	}
	if exists(path + tmpSuffix) {
		t.Fatal("temporary file left behind")
	}
	if _, err := readCheckpoint(path, kindConsumer); err == nil {
		t.Fatal("a producer checkpoint was read as a consumer's")
	}
	good, _ := os.ReadFile(path)
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"truncated", good[:20]},
		{"bit flip", func() []byte { b := append([]byte(nil), good...); b[9] ^= 1; return b }()},
		{"too long", append(append([]byte(nil), good...), 0)},
	} {
		if err := os.WriteFile(path, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := readCheckpoint(path, kindProducer)
		wantCorrupt(t, err, producerFile)
	}
}

// TestMkdirAllSynced: every directory Open creates is reported (its parent
// is fsync'd), outermost first, and an existing one is not created again.
func TestMkdirAllSynced(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "b", "c")
	created, err := mkdirAllSynced(dir)
	want := []string{filepath.Join(root, "a"), filepath.Join(root, "a", "b"), dir}
	if err != nil || !slices.Equal(created, want) {
		t.Fatalf("mkdirAllSynced = %q, %v; want %q", created, err, want)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("%s not created: %v", dir, err)
	}
	if created, err := mkdirAllSynced(dir); err != nil || len(created) != 0 {
		t.Fatalf("second mkdirAllSynced = %q, %v; want nothing created", created, err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := mkdirAllSynced(filepath.Join(file, "x")); err == nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("mkdirAllSynced under a file: err = %v, want one naming %s", err, file)
	}
}

// A failed replace removes its temporary file at once rather than leaving it
// for the next Open. The rename fails here because the target is a non-empty
// directory (a read-only directory would not stop root).
func TestCheckpointFailureRemovesTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, consumerFile)
	if err := os.MkdirAll(filepath.Join(path, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := writeCheckpoint(path, kindConsumer, checkpoint{7})
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want a failure naming %s", err, path)
	}
	if exists(path + tmpSuffix) {
		t.Fatalf("%s left behind after a failed write", path+tmpSuffix)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != consumerFile || !entries[0].IsDir() {
		t.Fatalf("directory holds %v, want only the untouched %s directory", entries, consumerFile)
	}
}
