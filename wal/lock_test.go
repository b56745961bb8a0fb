package wal

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// lockChild opens WAL_TEST_DIR and prints what Open returned.
func lockChild() {
	w, err := Open(os.Getenv("WAL_TEST_DIR"))
	if err != nil {
		os.Stdout.WriteString("open: " + err.Error() + "\n")
		os.Exit(0)
	}
	os.Stdout.WriteString("opened\n")
	w.Close()
}

func runLockChild(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=lock", "WAL_TEST_DIR="+dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func TestLock(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir)
	if _, err := Open(dir); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second Open in this process: %v, want ErrLocked naming %s", err, dir)
	}
	if out := runLockChild(t, dir); out != "open: "+ErrLocked.Error()+": "+dir {
		t.Fatalf("Open in another process: %q", out)
	}
	closeT(t, w)
	if out := runLockChild(t, dir); out != "opened" {
		t.Fatalf("Open in another process after Close: %q", out)
	}
	w = openT(t, dir)
	closeT(t, w)
}
