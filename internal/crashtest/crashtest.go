// Package crashtest runs the child processes of runnel's crash and
// multi-process tests (isb/mmap, wal, e2e). A test re-executes its own
// binary as a child that runs one named function instead of the tests;
// the parent reads the lines the child prints on its stdout, one write a
// line, and ends it when it chooses with SIGKILL (Kill), or lets it end by
// itself (Wait). What the child does and what the parent checks stay in
// each test: a parent records what the child acknowledged, kills it,
// reopens the storage and compares.
//
// The child side: TestMain calls RunChild first and returns when it
// reports that this process is a child:
//
//	func TestMain(m *testing.M) {
//		if crashtest.RunChild(map[string]func(){"crash": crashChild}) {
//			return
//		}
//		goleak.VerifyTestMain(m)
//	}
//
// A child writes each line with one write (Printf), so that a line
// reaches the parent whole or not at all when it is killed.
//
// Where the kill must land at a point of the child's own progress rather
// than after some time, the child signals itself and the parent only waits
// (Wait) and checks how it ended (State): e2e's crash plans do that, their
// progress counts being the pipeline's.
//
// It is internal: no user imports it.
package crashtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// childEnv names the child a re-executed test binary runs.
const childEnv = "RUNNEL_CRASHTEST_CHILD"

// maxLine is the longest line a child may print.
const maxLine = 1 << 20

// RunChild runs the child named by the environment when this process was
// started by Start or Run, and reports whether it did: TestMain then
// returns without running the tests, and the process exits with status 0
// unless the child exited itself. A name not in children exits with
// status 2.
func RunChild(children map[string]func()) bool {
	name := os.Getenv(childEnv)
	if name == "" {
		return false
	}
	child, ok := children[name]
	if !ok {
		fmt.Fprintln(os.Stderr, "crashtest: unknown child", name)
		os.Exit(2)
	}
	child()
	return true
}

// command re-executes the test binary, running no test, as the child
// named name with env (KEY=VALUE) added to this process's environment.
func command(name string, env []string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnv+"="+name), env...)
	return cmd
}

// Run runs the child named name to its end and returns its stdout and
// stderr, trimmed; err is exec's (an *exec.ExitError when the child
// failed).
func Run(name string, env ...string) (stdout, stderr string, err error) {
	cmd := command(name, env)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return strings.TrimSpace(out.String()), strings.TrimSpace(errOut.String()), err
}

// Child is a child process started by Start. Its methods are safe for
// concurrent use.
type Child struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the child exited and its stdout was read

	mu    sync.Mutex
	lines []string
	grew  chan struct{} // closed, and replaced, at each line
}

// Start starts the child named name with env (KEY=VALUE) added to this
// process's environment. Its stderr goes to this process's stderr, its
// stdout is read line by line (up to 1 MiB a line) as it comes. The test
// fails at once if the child cannot be started; a child still running
// when the test ends is killed, after a stack dump (Quit) when the test
// failed.
func Start(t testing.TB, name string, env ...string) *Child {
	t.Helper()
	c := &Child{cmd: command(name, env), done: make(chan struct{}), grew: make(chan struct{})}
	c.cmd.Stderr = os.Stderr
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, maxLine)
		for sc.Scan() {
			c.mu.Lock()
			c.lines = append(c.lines, sc.Text())
			close(c.grew)
			c.grew = make(chan struct{})
			c.mu.Unlock()
		}
		c.cmd.Wait()
	}()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			if t.Failed() {
				c.Quit() // a failed test shows where its children were
			} else {
				c.Kill()
			}
		}
	})
	return c
}

// Lines returns the lines the child printed so far: all of them once Done
// is closed.
func (c *Child) Lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lines[:len(c.lines):len(c.lines)]
}

// Done is closed once the child has exited and all its output was read.
func (c *Child) Done() <-chan struct{} { return c.done }

// State is the child's exit state; nil before Done is closed.
func (c *Child) State() *os.ProcessState {
	select {
	case <-c.done:
		return c.cmd.ProcessState
	default:
		return nil
	}
}

// WaitLine waits until the child has printed a line that starts with
// prefix ("": any line), has exited, or timeout has passed, and reports
// whether it printed such a line.
func (c *Child) WaitLine(prefix string, timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	seen, ended := 0, false
	for {
		c.mu.Lock()
		lines, grew := c.lines, c.grew
		c.mu.Unlock()
		for ; seen < len(lines); seen++ {
			if strings.HasPrefix(lines[seen], prefix) {
				return true
			}
		}
		if ended {
			return false
		}
		select {
		case <-grew:
		case <-c.done:
			ended = true // every line is read: look at the last ones
		case <-timer.C:
			return false
		}
	}
}

// Kill kills the child with SIGKILL, wherever it is, waits until it has
// exited and its output is read, and returns its lines. A child that has
// already ended is left as it is.
func (c *Child) Kill() []string {
	c.cmd.Process.Kill()
	<-c.done
	return c.Lines()
}

// Terminate asks the child to stop (SIGTERM), as a supervisor stopping it
// gracefully does, and returns at once: Wait for it to end.
func (c *Child) Terminate() error { return c.cmd.Process.Signal(syscall.SIGTERM) }

// Wait waits up to timeout for the child to end by itself and reports
// whether it did. One that did not is asked for its goroutines' stacks
// (SIGQUIT: the Go runtime prints them on the child's stderr, which is the
// test's, and exits), so that a child that hangs says where; if it has not
// exited after quitWait it is killed. Wait returns once it has exited.
func (c *Child) Wait(timeout time.Duration) bool {
	select {
	case <-c.done:
		return true
	case <-time.After(timeout):
		c.Quit()
		return false
	}
}

// quitWait bounds how long Quit waits for the runtime's stack dump.
const quitWait = 20 * time.Second

// Quit sends the child SIGQUIT, which makes the Go runtime print every
// goroutine's stack on its stderr and exit, waits up to quitWait for it to
// exit, kills it if it has not, and returns its lines. A child that has
// already ended is left as it is.
func (c *Child) Quit() []string {
	c.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-c.done:
		return c.Lines()
	case <-time.After(quitWait):
		return c.Kill()
	}
}

// Printf prints a line for the parent with one write, so that the line
// reaches it whole or not at all when the child is killed.
func Printf(format string, args ...any) {
	os.Stdout.WriteString(fmt.Sprintf(format, args...) + "\n")
}

// Fail prints "E " and the message, the line a parent takes for the
// child's failure, and exits with status 1.
func Fail(format string, args ...any) {
	Printf("E "+format, args...)
	os.Exit(1)
}

// Records splits each of a child's lines into its fields. A line that
// Fail printed ("E ...") fails the test at once: "{where}: child failed:
// {line}".
func Records(t testing.TB, where string, lines []string) [][]string {
	t.Helper()
	recs := make([][]string, 0, len(lines))
	for _, line := range lines {
		if strings.HasPrefix(line, "E ") || line == "E" {
			t.Fatalf("%s: child failed: %s", where, line)
		}
		recs = append(recs, strings.Fields(line))
	}
	return recs
}

// FlipByte XORs the byte at position at of the file path with mask, as
// damage a crash cannot cause (the tests that look for a *CorruptError
// after a kill make it).
func FlipByte(t testing.TB, path string, at int64, mask byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[at] ^= mask
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Atoi parses a number of a child's line. A malformed one panics: parent
// and child disagree on their lines.
func Atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}
