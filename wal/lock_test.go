package wal

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/internal/crashtest"
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
	out, _, err := crashtest.Run("lock", "WAL_TEST_DIR="+dir)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	return out
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
