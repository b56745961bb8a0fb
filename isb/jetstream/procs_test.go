package jetstream_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/crashtest"
	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/isb/isbtest"
	"github.com/runnel-dev/runnel/isb/jetstream"
)

// Two OS processes share one JetStream topic (issue 20): the test binary
// re-executes itself as children (procs_child_test.go), each with its own
// connection to the parent's server, producing ids of its own and joining
// one consumer group as one member of two. The parent reads what each
// child reports and checks it against what the group promises.

// procWait bounds how long the parent waits for a child to end.
const procWait = 90 * time.Second

// pos is an item's place: partition and offset.
type pos struct {
	p   int
	off int64
}

// procRun is what one child reported.
type procRun struct {
	name      string
	tries     int
	assigned  []int
	start     map[int]int64 // S: where each partition started
	produced  int
	read      map[pos]int   // B: the id read at each place
	reads     int           // items read, repeats included
	attempted map[int]int64 // c: the last commit begun per partition
	confirmed map[int]int64 // C: the last commit that returned
	halted    bool
	done      bool
}

// startProc starts child role as member, producing ids in produce ("from
// to", or "" for none), committing every every-th batch.
func startProc(t *testing.T, role string, srv *natstest.Server, prefix string, member int, produce string, every int) *crashtest.Child {
	return crashtest.Start(t, role,
		envURL+"="+srv.URL(), envPrefix+"="+prefix, fmt.Sprintf("%s=%d", envMember, member),
		envProduce+"="+produce, fmt.Sprintf("%s=%d", envEvery, every))
}

// finish waits for c to end by itself with success and parses its lines.
func finish(t *testing.T, name string, c *crashtest.Child) procRun {
	t.Helper()
	if !c.Wait(procWait) {
		t.Fatalf("%s did not end within %v; its lines: %q", name, procWait, tailLines(c.Lines()))
	}
	r := parseProc(t, name, c.Lines())
	if st := c.State(); !st.Success() || !r.done {
		t.Fatalf("%s ended with %v (done %v); its last lines: %q", name, st, r.done, tailLines(c.Lines()))
	}
	return r
}

func tailLines(lines []string) []string { return lines[max(0, len(lines)-5):] }

func parseProc(t *testing.T, name string, lines []string) procRun {
	t.Helper()
	r := procRun{name: name, start: map[int]int64{}, read: map[pos]int{},
		attempted: map[int]int64{}, confirmed: map[int]int64{}}
	for _, f := range crashtest.Records(t, name, lines) {
		switch f[0] {
		case "J":
			r.tries = crashtest.Atoi(f[1])
			for _, p := range f[2:] {
				r.assigned = append(r.assigned, crashtest.Atoi(p))
			}
		case "S":
			r.start[crashtest.Atoi(f[1])] = int64(crashtest.Atoi(f[2]))
		case "P":
			r.produced = crashtest.Atoi(f[1])
		case "B":
			p, off := crashtest.Atoi(f[1]), int64(crashtest.Atoi(f[2]))
			for i, id := range f[3:] {
				at := pos{p, off + int64(i)}
				if _, ok := r.read[at]; ok {
					t.Fatalf("%s read partition %d offset %d twice", name, at.p, at.off)
				}
				r.read[at] = crashtest.Atoi(id)
				r.reads++
			}
		case "c", "C":
			m := r.attempted
			if f[0] == "C" {
				m = r.confirmed
			}
			m[crashtest.Atoi(f[1])] = int64(crashtest.Atoi(f[2]))
		case "H":
			r.halted = true
		case "D":
			r.done = true
		default:
			t.Fatalf("%s printed %q", name, f)
		}
	}
	return r
}

// checkMember checks that r owned exactly parts and read only those, each
// id where the route puts it.
func checkMember(t *testing.T, r procRun, parts []int) {
	t.Helper()
	if !slices.Equal(r.assigned, parts) {
		t.Fatalf("%s owns partitions %v; want %v", r.name, r.assigned, parts)
	}
	for at, id := range r.read {
		if !slices.Contains(parts, at.p) {
			t.Fatalf("%s read partition %d offset %d (id %d), not one of its partitions %v", r.name, at.p, at.off, id, parts)
		}
		if id < 0 || id >= 2*procPerProcess || id%procPartitions != at.p {
			t.Fatalf("%s read id %d at partition %d offset %d; ids are 0..%d, routed to id mod %d",
				r.name, id, at.p, at.off, 2*procPerProcess-1, procPartitions)
		}
	}
}

// checkSpan checks that r read partition p at exactly offsets from..to-1.
func checkSpan(t *testing.T, r procRun, p int, from, to int64) {
	t.Helper()
	n := int64(0)
	for at := range r.read {
		if at.p != p {
			continue
		}
		if at.off < from || at.off >= to {
			t.Fatalf("%s read partition %d offset %d; want only [%d, %d)", r.name, p, at.off, from, to)
		}
		n++
	}
	if n != to-from {
		t.Fatalf("%s read %d items of partition %d; want %d, offsets [%d, %d)", r.name, n, p, to-from, from, to)
	}
}

// checkStoredCommits opens the topic as one more process and checks that
// the group's stored commit of every partition is its end.
func checkStoredCommits(t *testing.T, srv *natstest.Server, prefix string) {
	t.Helper()
	tp, err := jetstream.NewTopic[isbtest.Item](srv.Connect(), procTopic, procOptions(prefix)...)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	c, err := tp.PullConsumer(procGroup)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for p := range procPartitions {
		if off, err := c.Committed(p); err != nil || off != procPerPart {
			t.Fatalf("the group's stored commit of partition %d is %d, %v; want %d", p, off, err, procPerPart)
		}
	}
}

// Two processes, each producing 1000 ids and reading its two of four
// partitions as one member of group g: every id is read exactly once, by
// the member owning its partition, and every commit reaches the end.
func TestTwoProcessesShareTopic(t *testing.T) {
	began := time.Now()
	srv := natstest.Start(t)
	prefix := freshPrefix()
	a := startProc(t, "procs-member", srv, prefix, 0, fmt.Sprintf("0 %d", procPerProcess), 2)
	b := startProc(t, "procs-member", srv, prefix, 1, fmt.Sprintf("%d %d", procPerProcess, 2*procPerProcess), 3)
	runs := []procRun{finish(t, "process A", a), finish(t, "process B", b)}
	seen, at := map[int]string{}, map[pos]string{}
	for i, r := range runs {
		parts := []int{2 * i, 2*i + 1}
		checkMember(t, r, parts)
		if r.produced != procPerProcess {
			t.Fatalf("%s produced %d items; want %d", r.name, r.produced, procPerProcess)
		}
		for _, p := range parts {
			if r.start[p] != 0 || r.confirmed[p] != procPerPart {
				t.Fatalf("%s started partition %d at %d and last committed %d; want 0 and %d", r.name, p, r.start[p], r.confirmed[p], procPerPart)
			}
			checkSpan(t, r, p, 0, procPerPart)
		}
		if r.reads != procPerProcess {
			t.Fatalf("%s read %d items; want %d", r.name, r.reads, procPerProcess)
		}
		for where, id := range r.read {
			if by, ok := seen[id]; ok {
				t.Fatalf("id %d read by %s and %s", id, by, r.name)
			}
			if by, ok := at[where]; ok {
				t.Fatalf("partition %d offset %d read by %s and %s", where.p, where.off, by, r.name)
			}
			seen[id], at[where] = r.name, r.name
		}
	}
	if len(seen) != 2*procPerProcess {
		t.Fatalf("%d distinct ids read; want %d", len(seen), 2*procPerProcess)
	}
	checkStoredCommits(t, srv, prefix)
	t.Logf("2 processes: %d ids produced, %d and %d read, each once; %v", 2*procPerProcess, runs[0].reads, runs[1].reads, time.Since(began).Round(time.Millisecond))
}
