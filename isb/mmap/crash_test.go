package mmap

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The crash test: a child process produces with Immediate flush and
// consumes with manual commits, printing each acknowledged append and
// commit as it happens; the parent kills it with SIGKILL at a random
// moment, reopens the directory and checks what survived.

const (
	crashParts   = 2
	crashGroup   = "crash/group" // escaped on disk
	crashSegment = 16 << 10
)

func crashOptions() []Option {
	return []Option{SegmentSize(crashSegment), Flush(Immediate()), MaxRetainedConsumedSegments(1)}
}

// crashChild runs until killed.
func crashChild() {
	dir, round := os.Getenv("MMAP_TEST_DIR"), os.Getenv("MMAP_TEST_ROUND")
	out := func(format string, args ...any) {
		// One write per line: a line reaches the pipe whole or not at all.
		os.Stdout.WriteString(fmt.Sprintf(format, args...) + "\n")
	}
	b, err := New[string](dir, crashOptions()...)
	if err == nil {
		err = b.Open(testTopic, crashParts)
	}
	if err != nil {
		out("E %v", err)
		os.Exit(1)
	}
	for p := range crashParts {
		l := b.Partition(p)
		from, _ := l.Committed(crashGroup)
		out("R %d %d", p, from)
		go func() {
			buf := make([]string, 16)
			rng := rand.New(rand.NewPCG(uint64(p), uint64(len(round))))
			for off := from; ; {
				if off >= l.Tail() {
					time.Sleep(50 * time.Microsecond)
					continue
				}
				items, err := l.Read(off, 1+rng.IntN(len(buf)), buf)
				if err != nil {
					out("E read %d at %d: %v", p, off, err)
					os.Exit(1)
				}
				off += int64(len(items))
				if rng.IntN(3) == 0 {
					out("c %d %d", p, off)
					if err := l.Commit(crashGroup, off); err != nil {
						out("E commit: %v", err)
						os.Exit(1)
					}
					out("C %d %d", p, off)
					if err := l.Release(off); err != nil {
						out("E release: %v", err)
						os.Exit(1)
					}
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for seq := 0; ; {
		p := seq % crashParts
		items := make([]string, 1+rng.IntN(8))
		for i := range items {
			items[i] = fmt.Sprintf("r%s-%d", round, seq)
			seq++
		}
		first, err := b.Partition(p).Append(items)
		if err != nil {
			out("E append: %v", err)
			os.Exit(1)
		}
		out("A %d %d %s", p, first, strings.Join(items, ","))
	}
}

type crashModel struct {
	acked  [crashParts]map[int64]string // offset -> acknowledged item
	commit [crashParts]int64            // last acknowledged commit
	intent [crashParts]int64            // last attempted commit
}

func TestCrash(t *testing.T) {
	rounds := 24
	if testing.Short() {
		rounds = 8
	}
	dir := t.TempDir()
	var m crashModel
	for p := range crashParts {
		m.acked[p] = map[int64]string{}
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	start := time.Now()
	var lines, appends, commits int
	for round := range rounds {
		resume := m.verify(t, dir, round)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=crash", "MMAP_TEST_DIR="+dir, "MMAP_TEST_ROUND="+strconv.Itoa(round))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var parsed []string
		wg.Go(func() {
			sc := bufio.NewScanner(stdout)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				parsed = append(parsed, sc.Text())
			}
		})
		// Kill at a random moment: sometimes during recovery, mostly
		// while appends and commits are in flight.
		time.Sleep(time.Duration(30+rng.IntN(600)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		wg.Wait()
		cmd.Wait()
		for _, line := range parsed {
			lines++
			f := strings.Fields(line)
			switch f[0] {
			case "E":
				t.Fatalf("round %d: child failed: %s", round, line)
			case "R":
				p, off := atoi(f[1]), int64(atoi(f[2]))
				if off != resume[p] {
					t.Fatalf("round %d: partition %d resumed from %d, its commit is %d", round, p, off, resume[p])
				}
			case "A":
				appends++
				p, first := atoi(f[1]), int64(atoi(f[2]))
				for i, it := range strings.Split(f[3], ",") {
					m.acked[p][first+int64(i)] = it
				}
			case "c":
				m.intent[atoi(f[1])] = int64(atoi(f[2]))
			case "C":
				commits++
				m.commit[atoi(f[1])] = int64(atoi(f[2]))
			}
		}
	}
	m.verify(t, dir, rounds)
	t.Logf("%d rounds in %v: %d acknowledged appends, %d commits, %d lines", rounds, time.Since(start).Round(time.Millisecond), appends, commits, lines)
	if appends == 0 || commits == 0 {
		t.Fatal("the child never got to append and commit")
	}
}

// verify opens dir as a restart would and checks it against the model;
// it returns the restored commit of each partition.
func (m *crashModel) verify(t *testing.T, dir string, round int) (resume [crashParts]int64) {
	t.Helper()
	if round == 0 {
		return resume
	}
	b, err := New[string](dir, crashOptions()...)
	if err == nil {
		err = b.Open(testTopic, crashParts)
	}
	if err != nil {
		t.Fatalf("after round %d: open: %v", round-1, err)
	}
	defer b.Close()
	for p := range crashParts {
		l := b.Partition(p)
		c, ok := l.Committed(crashGroup)
		if m.commit[p] > 0 && !ok {
			t.Fatalf("after round %d: partition %d lost its commit", round-1, p)
		}
		// A commit killed in flight may or may not have landed.
		if c != m.commit[p] && c != m.intent[p] {
			t.Fatalf("after round %d: partition %d restored commit %d, acknowledged %d (attempted %d)", round-1, p, c, m.commit[p], m.intent[p])
		}
		if l.Head() > c {
			t.Fatalf("after round %d: partition %d retains from %d, past the commit %d", round-1, p, l.Head(), c)
		}
		got, err := readUntilError(l)
		if err != nil {
			t.Fatalf("after round %d: partition %d: %v", round-1, p, err)
		}
		seen := map[string]int{}
		for _, it := range got {
			seen[it]++
		}
		for off, want := range m.acked[p] {
			if off < l.Head() {
				continue // released after every group consumed it
			}
			if off >= l.Tail() {
				t.Fatalf("after round %d: partition %d lost acknowledged offset %d (tail %d)", round-1, p, off, l.Tail())
			}
			if g := got[off-l.Head()]; g != want || seen[want] != 1 {
				t.Fatalf("after round %d: partition %d offset %d holds %q (seen %d times), want %q once", round-1, p, off, g, seen[want], want)
			}
		}
		resume[p] = c
	}
	return resume
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}
