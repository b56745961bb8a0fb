package jetstream_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/natstest"
)

// A member process killed with SIGKILL mid-run, committing only every
// third batch, and a new process taking over its member slot once the
// dead one's claim expired (ClaimTTL 1s): the heir resumes from the
// group's stored commit, which is the last commit the victim saw return or
// one it began; it reads everything from there; items read twice are
// exactly the victim's reads past that commit, none of what it committed;
// nothing is lost; the other member reads its partitions exactly once.
func TestKilledMemberTakenOver(t *testing.T) {
	began := time.Now()
	srv := natstest.Start(t)
	prefix := freshPrefix()
	victim := startProc(t, "procs-victim", srv, prefix, 0, fmt.Sprintf("0 %d", procPerProcess), 3)
	b := startProc(t, "procs-member", srv, prefix, 1, fmt.Sprintf("%d %d", procPerProcess, 2*procPerProcess), 1)
	// Produced in full, and half its share read: kill it wherever it is
	// between there and where it parks.
	for _, line := range []string{"P", "H"} {
		if !victim.WaitLine(line, procWait) {
			t.Fatalf("the victim did not print %q within %v; its lines: %q", line, procWait, tailLines(victim.Lines()))
		}
	}
	victimLines := victim.Kill()
	rv := parseProc(t, "the victim", victimLines)
	if st := victim.State(); st.Success() {
		t.Fatalf("the victim ended with %v before it was killed", st)
	}
	killed := time.Now()
	heir := startProc(t, "procs-heir", srv, prefix, 0, "", 2)
	rh, rb := finish(t, "the heir", heir), finish(t, "process B", b)
	tookOver := time.Since(killed)

	checkMember(t, rv, []int{0, 1})
	checkMember(t, rh, []int{0, 1})
	checkMember(t, rb, []int{2, 3})
	if rv.produced != procPerProcess || rb.produced != procPerProcess {
		t.Fatalf("produced %d and %d items; want %d each", rv.produced, rb.produced, procPerProcess)
	}
	for _, p := range []int{2, 3} {
		checkSpan(t, rb, p, 0, procPerPart)
	}
	dups, uncommitted, cut := checkTakeover(t, rv, rh)

	// Every id read, the duplicates exactly once more.
	count := map[int]int{}
	for _, r := range []procRun{rv, rh, rb} {
		for _, id := range r.read {
			count[id]++
		}
	}
	twice := 0
	for id := range 2 * procPerProcess {
		switch count[id] {
		case 1:
		case 2:
			twice++
		default:
			t.Fatalf("id %d read %d times", id, count[id])
		}
	}
	if twice != dups || rv.reads+rh.reads+rb.reads != 2*procPerProcess+dups {
		t.Fatalf("%d ids read twice, %d reads in all; want %d and %d", twice, rv.reads+rh.reads+rb.reads, dups, 2*procPerProcess+dups)
	}
	checkStoredCommits(t, srv, prefix)
	last := "" // the kind of the victim's last line but H: where it was killed
	for _, l := range victimLines {
		if l != "H" {
			last = l[:1]
		}
	}
	t.Logf("victim read %d (%d not committed; killed after a %q line; %d commits cut short, %d of them stored), heir read %d after %d join tries, B read %d; %d read twice; takeover %v, all %v",
		rv.reads, uncommitted, last, cut[0], cut[1], rh.reads, rh.tries, rb.reads, dups,
		tookOver.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// checkTakeover checks, per partition of the victim's slot, where the heir
// started and what both read, and returns the items both read, those the
// victim read past its last commit that returned, and how many of its
// commits the kill cut short (begun, not returned) and how many of those
// the heir found stored.
func checkTakeover(t *testing.T, rv, rh procRun) (dups, uncommitted int, cut [2]int) {
	t.Helper()
	for _, p := range []int{0, 1} {
		// The victim prints each batch before committing it and dies at
		// most before printing its last one: what it printed of p is a
		// prefix 0..k-1.
		k := int64(0)
		for at := range rv.read {
			if at.p == p {
				k++
			}
		}
		checkSpan(t, rv, p, 0, k)
		// The stored commit is the last that returned, or a later one
		// the kill interrupted that reached the server anyway.
		s, lastC, lastc := rh.start[p], rv.confirmed[p], rv.attempted[p]
		if s < lastC || s > lastc {
			t.Fatalf("the heir started partition %d at %d; the victim's last commit returned at %d, its last begun was %d", p, s, lastC, lastc)
		}
		checkSpan(t, rh, p, s, procPerPart)
		if lastc > lastC {
			cut[0]++
			if s == lastc {
				cut[1]++
			}
		}
		for off := s; off < k; off++ {
			at := pos{p, off}
			if rv.read[at] != rh.read[at] {
				t.Fatalf("partition %d offset %d: the victim read id %d, the heir %d", p, off, rv.read[at], rh.read[at])
			}
		}
		if k > s {
			dups += int(k - s)
		}
		uncommitted += int(k - lastC)
		if s < procPerPart && rh.confirmed[p] != procPerPart {
			t.Fatalf("the heir last committed partition %d at %d; want %d", p, rh.confirmed[p], procPerPart)
		}
	}
	if dups > uncommitted {
		t.Fatalf("%d items read twice; the victim had read only %d past its commits", dups, uncommitted)
	}
	return dups, uncommitted, cut
}
