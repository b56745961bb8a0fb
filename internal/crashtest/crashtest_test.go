package crashtest_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/crashtest"
)

func TestMain(m *testing.M) {
	if crashtest.RunChild(map[string]func(){
		"count": countChild,
		"echo":  func() { os.Stdout.WriteString(os.Getenv("CRASHTEST_ECHO") + "\n") },
	}) {
		return
	}
	os.Exit(m.Run())
}

// countChild prints "n x", "n xx", "n ", "n x", ... until killed.
func countChild() {
	for i := 1; ; i++ {
		os.Stdout.WriteString("n " + strings.Repeat("x", i%3) + "\n")
		time.Sleep(time.Millisecond)
	}
}

// TestKill: a child that runs until killed prints lines the parent reads
// as they come, and Kill ends it with SIGKILL (not by itself).
func TestKill(t *testing.T) {
	c := crashtest.Start(t, "count")
	if !c.WaitLine("n xx", time.Minute) {
		t.Fatalf("no line %q within a minute: %q", "n xx", c.Lines())
	}
	lines := c.Kill()
	if len(lines) < 2 || lines[0] != "n x" || lines[1] != "n xx" {
		t.Fatalf("lines %q", lines)
	}
	if st := c.State(); st == nil || st.Success() || st.Exited() {
		t.Fatalf("killed child ended with %v, want killed by a signal", st)
	}
	if recs := crashtest.Records(t, "count", lines); len(recs) != len(lines) || recs[0][0] != "n" || recs[0][1] != "x" {
		t.Fatalf("Records = %q", recs)
	}
	if c.WaitLine("never", time.Minute) {
		t.Fatal("WaitLine found a line the child never printed")
	}
}

// TestWaitAndRun: a child that ends by itself is waited for, and Run
// returns its output and passes the environment it was given.
func TestWaitAndRun(t *testing.T) {
	c := crashtest.Start(t, "echo", "CRASHTEST_ECHO=hello")
	if !c.Wait(time.Minute) {
		t.Fatal("the child did not end")
	}
	if got := c.Lines(); len(got) != 1 || got[0] != "hello" || !c.State().Success() {
		t.Fatalf("lines %q, state %v", got, c.State())
	}
	out, _, err := crashtest.Run("echo", "CRASHTEST_ECHO=again")
	if err != nil || out != "again" {
		t.Fatalf("Run = %q, %v", out, err)
	}
	if _, _, err := crashtest.Run("nonesuch"); err == nil {
		t.Fatal("an unknown child ran")
	}
}
