package mmap

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=lock", "MMAP_TEST_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
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
