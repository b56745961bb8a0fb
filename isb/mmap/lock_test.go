package mmap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/crashtest"
)

// lockChild tries to open the topic under MMAP_TEST_DIR and prints the result.
func lockChild() {
	b, err := openErr(os.Getenv("MMAP_TEST_DIR"), 1)
	if err != nil {
		fmt.Println("error:", err, errors.Is(err, ErrLocked))
		os.Exit(0)
	}
	b.Close()
	fmt.Println("opened")
}

func openFromChild(t *testing.T, dir string) string {
	t.Helper()
	out, stderr, err := crashtest.Run("lock", "MMAP_TEST_DIR="+dir)
	if err != nil {
		t.Fatalf("child: %v\n%s\n%s", err, out, stderr)
	}
	return out
}

func TestLockAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, 1)
	topicDir := filepath.Join(dir, testTopic)
	out := openFromChild(t, dir)
	if !strings.HasPrefix(out, "error: ") || !strings.Contains(out, topicDir) || !strings.HasSuffix(out, " true") {
		t.Fatalf("second open in a child process: %q; want ErrLocked naming %s", out, topicDir)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if out := openFromChild(t, dir); out != "opened" {
		t.Fatalf("open after Close: %q", out)
	}
}

func TestLockInProcess(t *testing.T) {
	dir := t.TempDir()
	open(t, dir, 1)
	_, err := openErr(dir, 1)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), filepath.Join(dir, testTopic)) {
		t.Fatalf("second open: %v", err)
	}
}

// TestBackendOpensOnce: a Backend stores one topic once. Opening it again
// after Close would start over with the interval flusher already stopped
// and hold a lock and mappings that no later Close releases.
func TestBackendOpensOnce(t *testing.T) {
	dir := t.TempDir()
	b, err := New[string](dir, SegmentSize(MinSegmentSize), Flush(Interval(time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(testTopic, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(testTopic, 1); !errors.Is(err, ErrOpened) {
		t.Fatalf("second Open while open: %v, want ErrOpened", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(testTopic, 1); !errors.Is(err, ErrOpened) || !strings.Contains(err.Error(), testTopic) {
		t.Fatalf("Open after Close: %v, want ErrOpened naming the topic", err)
	}
	// Nothing is held: another Backend opens the topic.
	b2, err := openErr(dir, 1)
	if err != nil {
		t.Fatalf("open by a new Backend after Close: %v", err)
	}
	// An Open that failed holds nothing and may be tried again.
	b3, err := New[string](dir, SegmentSize(MinSegmentSize))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b3.Open(testTopic, 1); !errors.Is(err, ErrLocked) {
		t.Fatalf("Open of a locked topic: %v, want ErrLocked", err)
	}
	if err := b2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b3.Open(testTopic, 1); err != nil {
		t.Fatalf("Open again after the lock was released: %v", err)
	}
	if err := b3.Close(); err != nil {
		t.Fatal(err)
	}
}
