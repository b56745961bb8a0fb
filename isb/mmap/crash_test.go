package mmap

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/crashtest"
	"github.com/runnel-dev/runnel/isb"
)

// The crash test: a child process produces to a topic with Immediate flush
// and consumes it with manual commits, printing each acknowledged produce
// and commit as it happens; the parent kills it with SIGKILL at a random
// moment, reopens the directory and checks what survived.

const (
	crashParts   = 2
	crashGroup   = "crash group" // escaped on disk
	crashSegment = 16 << 10
)

func crashOptions() []Option {
	return []Option{SegmentSize(crashSegment), Flush(Immediate()), MaxRetainedConsumedSegments(1)}
}

// crashChild runs a topic until killed: one goroutine produces batches to
// alternating partitions, one pull consumer with manual commits reads them
// and commits at random points.
func crashChild() {
	dir, round := os.Getenv("MMAP_TEST_DIR"), os.Getenv("MMAP_TEST_ROUND")
	ctx := context.Background()
	topic, err := NewTopic[string](dir, testTopic, append(crashOptions(), Topic(isb.Partitions(crashParts)))...)
	if err != nil {
		crashtest.Fail("open: %v", err)
	}
	c, err := topic.PullConsumer(crashGroup, isb.ManualCommit(), isb.BatchSize(16))
	if err != nil {
		crashtest.Fail("consumer: %v", err)
	}
	go func() {
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
		var next [crashParts]int64
		var started [crashParts]bool
		for {
			b, err := c.Pull(ctx)
			if err != nil {
				crashtest.Fail("pull: %v", err)
			}
			p := b.Partition
			if !started[p] {
				started[p] = true
				crashtest.Printf("F %d %d", p, b.Offset)
			} else if b.Offset != next[p] {
				crashtest.Fail("partition %d: batch at %d after %d: a gap or a repeat", p, b.Offset, next[p])
			}
			next[p] = b.End()
			if rng.IntN(3) == 0 {
				crashtest.Printf("c %d %d", p, b.End())
				if err := c.CommitTo(p, b.End()); err != nil {
					crashtest.Fail("commit: %v", err)
				}
				crashtest.Printf("C %d %d", p, b.End())
			}
		}
	}()
	pr := topic.Producer(nil)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for seq := 0; ; {
		p := seq % crashParts
		items := make([]string, 1+rng.IntN(8))
		for i := range items {
			items[i] = fmt.Sprintf("r%s-%d", round, seq)
			seq++
		}
		last, err := pr.ProduceTo(ctx, p, items)
		if err != nil {
			crashtest.Fail("produce: %v", err)
		}
		crashtest.Printf("A %d %d %s", p, last-int64(len(items))+1, strings.Join(items, ","))
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
		m.verifyDamaged(t, dir, round, rng)
		resume := m.verify(t, dir, round)
		child := crashtest.Start(t, "crash", "MMAP_TEST_DIR="+dir, "MMAP_TEST_ROUND="+strconv.Itoa(round))
		// Kill at a random moment: sometimes during recovery, mostly
		// while appends and commits are in flight.
		time.Sleep(time.Duration(30+rng.IntN(600)) * time.Millisecond)
		recs := crashtest.Records(t, fmt.Sprintf("round %d", round), child.Kill())
		lines += len(recs)
		for _, f := range recs {
			switch f[0] {
			case "F":
				p, off := crashtest.Atoi(f[1]), int64(crashtest.Atoi(f[2]))
				if off != resume[p] {
					t.Fatalf("round %d: partition %d resumed from %d, its commit is %d", round, p, off, resume[p])
				}
			case "A":
				appends++
				p, first := crashtest.Atoi(f[1]), int64(crashtest.Atoi(f[2]))
				for i, it := range strings.Split(f[3], ",") {
					m.acked[p][first+int64(i)] = it
				}
			case "c":
				m.intent[crashtest.Atoi(f[1])] = int64(crashtest.Atoi(f[2]))
			case "C":
				commits++
				m.commit[crashtest.Atoi(f[1])] = int64(crashtest.Atoi(f[2]))
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
		_, err = b.Open(testTopic, crashParts)
	}
	if err != nil {
		t.Fatalf("after round %d: open: %v", round-1, err)
	}
	defer b.Close()
	for p := range crashParts {
		l := b.Partition(p)
		c, ok := committed(t, l, crashGroup)
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
		// What was restored is the commit from now on: a commit killed
		// in flight that landed is acknowledged by the restart, so the
		// next round's commit must be compared with it (keeping the old
		// acknowledged one failed a round that resumed from a landed
		// commit and was killed during its next one).
		if ok {
			m.commit[p], m.intent[p] = c, c
		}
	}
	return resume
}

// verifyDamaged flips a byte in the payload of a random record of a copy
// of dir and opens the copy: the damaged record reads as a *CorruptError
// (or, if it is the last record past the producer checkpoint, is cut as a
// torn tail would be), and every other acknowledged item reads back
// intact.
func (m *crashModel) verifyDamaged(t *testing.T, dir string, round int, rng *rand.Rand) {
	t.Helper()
	if round == 0 {
		return
	}
	cp := snapshot(t, dir)
	p := rng.IntN(crashParts)
	recs := partitionRecords(t, cp, p)
	if len(recs) == 0 {
		return
	}
	r := recs[rng.IntN(len(recs))]
	payload := r.to - r.from - recordOverhead
	flipByte(t, filepath.Join(partDir(cp, p), r.file), r.from+recordHeaderSize+rng.Int64N(payload))
	b, err := New[string](cp, crashOptions()...)
	if err == nil {
		_, err = b.Open(testTopic, crashParts)
	}
	if err != nil {
		t.Fatalf("after round %d, record %d of partition %d damaged: open: %v", round-1, r.offset, p, err)
	}
	defer b.Close()
	for q := range crashParts {
		l := b.Partition(q)
		for off, want := range m.acked[q] {
			if off < l.Head() {
				continue
			}
			if q == p && off == r.offset {
				if off == l.Tail() {
					continue // the last record, past the checkpoint: cut
				}
				if _, _, err := l.Read(bg, off, 1, nil); err == nil {
					t.Fatalf("after round %d: damaged record %d of partition %d read without an error", round-1, off, p)
				} else {
					wantCorrupt(t, err, r.file)
				}
				continue
			}
			if off >= l.Tail() {
				t.Fatalf("after round %d, record %d of partition %d damaged: partition %d lost acknowledged offset %d (tail %d)", round-1, r.offset, p, q, off, l.Tail())
			}
			_, got, err := l.Read(bg, off, 1, nil)
			if err != nil || got[0] != want {
				t.Fatalf("after round %d, record %d of partition %d damaged: partition %d offset %d: %q, %v; want %q", round-1, r.offset, p, q, off, got, err, want)
			}
		}
	}
}
