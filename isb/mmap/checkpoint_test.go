package mmap

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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
