package wal

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/crashtest"
)

// The crash test: a child process appends batches from several goroutines
// (one ISB partition each, so concurrent Appends share fsyncs), moves to a
// new window every few milliseconds and closes the window before the last
// with a GC event, while compaction runs every 20 ms and whenever the log
// doubles. It prints each Append and GC before it starts and after it
// returns; the parent kills it with SIGKILL at a random moment, opens the
// directory as a restart would and checks what survived, over 32 rounds.

const crashParts = 3

func crashOptions() []Option {
	return []Option{SegmentSize(16 << 10), CompactEvery(20 * time.Millisecond), CompactAfter(64 << 10)}
}

// crashEntry is the entry the child appends at offset off of partition p,
// in window id: the parent rebuilds it to compare.
func crashEntry(p int32, off int64, id int) Entry {
	w := win(id)
	return Entry{
		Partition: p,
		Offset:    off,
		EventTime: w.Start.Add(time.Duration(off%10_000) * time.Millisecond),
		Keys:      []string{"k" + strconv.FormatInt(off%5, 10)},
		Windows:   []Window{w},
		Value:     fmt.Appendf(nil, "v-%d-%d-%s", p, off, strings.Repeat("x", int(off%64))),
	}
}

func windowID(w Window) int { return int(w.Start.Sub(base) / (10 * time.Second)) }

func crashChild() {
	dir, round := os.Getenv("WAL_TEST_DIR"), os.Getenv("WAL_TEST_ROUND")
	w, err := Open(dir, crashOptions()...)
	if err != nil {
		crashtest.Fail("open: %v", err)
	}
	rec := w.Recovered()
	// Rebuild: the replayed windows are all from earlier rounds; close them
	// as a reduce whose watermark passed them would.
	old := map[int]bool{}
	for e, err := range w.Replay() {
		if err != nil {
			crashtest.Fail("replay: %v", err)
		}
		old[windowID(e.Windows[0])] = true
	}
	r, _ := strconv.Atoi(round)
	var cur atomic.Int64
	cur.Store(int64(r * 1000))
	gc := func(id int) {
		crashtest.Printf("g %d", id)
		if err := w.GC(ctx, win(id).End, win(id)); err != nil {
			crashtest.Fail("gc: %v", err)
		}
		crashtest.Printf("G %d", id)
	}
	for id := range old {
		gc(id)
	}
	var inUse [crashParts]atomic.Int64
	for p := range int32(crashParts) {
		inUse[p].Store(cur.Load())
		next := int64(0)
		if off, ok := rec.LastOffsets[p]; ok {
			next = off + 1
		}
		go func() {
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(p)))
			for {
				id := int(cur.Load())
				inUse[p].Store(int64(id))
				n := 1 + rng.IntN(20)
				batch := make([]Entry, n)
				for i := range batch {
					batch[i] = crashEntry(p, next+int64(i), id)
				}
				crashtest.Printf("a %d %d %d %d", p, next, n, id)
				if err := w.Append(ctx, batch...); err != nil {
					crashtest.Fail("append: %v", err)
				}
				crashtest.Printf("A %d %d %d", p, next, n)
				next += int64(n)
			}
		}()
	}
	// Move to a new window every 5 ms and close the one before the last,
	// once no appender still appends to it.
	for {
		time.Sleep(5 * time.Millisecond)
		target := int(cur.Add(1)) - 2
		if target < r*1000 {
			continue
		}
		for p := range crashParts {
			for inUse[p].Load() <= int64(target) {
				time.Sleep(100 * time.Microsecond)
			}
		}
		gc(target)
	}
}

type crashKey struct {
	p   int32
	off int64
}

// crashModel is what the parent knows from the child's lines.
type crashModel struct {
	announced map[crashKey]int  // entry -> window, from "a" lines
	acked     map[crashKey]bool // their Append returned, or a restart replayed them
	closed    map[int]bool      // windows whose GC returned (or whose GC may have landed and that have no entry left)
	gcIntent  map[int]bool      // windows whose GC started but did not return
	gcMark    time.Time         // highest acknowledged GC watermark

	inflightKept, inflightLost int // entries of unacknowledged batches a restart found, or not
	repairs                    int // torn tails cut
}

func TestCrash(t *testing.T) {
	rounds := 32
	if testing.Short() {
		rounds = 8
	}
	dir := t.TempDir()
	m := &crashModel{announced: map[crashKey]int{}, acked: map[crashKey]bool{}, closed: map[int]bool{}, gcIntent: map[int]bool{}}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	start := time.Now()
	var appends, gcs, lines, replayed int
	for round := range rounds {
		replayed += m.verify(t, dir, round)
		child := crashtest.Start(t, "crash", "WAL_TEST_DIR="+dir, "WAL_TEST_ROUND="+strconv.Itoa(round+1))
		// Kill at a random moment: every fourth round during Open, replay
		// and the start's compaction, the others while appends, GCs and
		// compactions run. The delay counts from the child's first
		// acknowledged append, not from its start: a child under -race on
		// a loaded machine can take longer to start than any fixed delay.
		if round%4 != 0 {
			child.WaitLine("A", 30*time.Second) // the first acknowledged append
		}
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		recs := crashtest.Records(t, fmt.Sprintf("round %d", round), child.Kill())
		lines += len(recs)
		for _, f := range recs {
			switch f[0] {
			case "a", "A":
				p, first, n := int32(crashtest.Atoi(f[1])), int64(crashtest.Atoi(f[2])), crashtest.Atoi(f[3])
				for i := range int64(n) {
					k := crashKey{p, first + i}
					if f[0] == "a" {
						m.announced[k] = crashtest.Atoi(f[4])
					} else {
						m.acked[k] = true
					}
				}
				if f[0] == "A" {
					appends++
				}
			case "g":
				m.gcIntent[crashtest.Atoi(f[1])] = true
			case "G":
				id := crashtest.Atoi(f[1])
				gcs++
				delete(m.gcIntent, id)
				m.closed[id] = true
				if e := win(id).End; e.After(m.gcMark) {
					m.gcMark = e
				}
			}
		}
	}
	replayed += m.verify(t, dir, rounds)
	t.Logf("%d rounds in %v: %d acknowledged appends, %d acknowledged GCs, %d entries replayed, %d lines; entries of batches killed in flight: %d kept, %d lost; %d torn tails cut",
		rounds, time.Since(start).Round(time.Millisecond), appends, gcs, replayed, lines, m.inflightKept, m.inflightLost, m.repairs)
	if appends < rounds || gcs == 0 {
		t.Fatalf("the child got to %d appends and %d GCs", appends, gcs)
	}
}

// verify opens dir as a restart would and checks it against the model:
// every acknowledged entry of a window not closed is replayed once, intact,
// each partition in offset order; nothing replayed was never appended or
// belongs to a closed window. It returns the number of entries replayed.
func (m *crashModel) verify(t *testing.T, dir string, round int) int {
	t.Helper()
	if round == 0 {
		return 0
	}
	w, err := Open(dir, crashOptions()...)
	if err != nil {
		t.Fatalf("after round %d: open: %v", round, err)
	}
	defer w.Close()
	rec := w.Recovered()
	present := map[crashKey]bool{}
	windowsPresent := map[int]bool{}
	last := map[int32]int64{}
	for e, err := range w.Replay() {
		if err != nil {
			t.Fatalf("after round %d: replay: %v", round, err)
		}
		k := crashKey{e.Partition, e.Offset}
		id, ok := m.announced[k]
		switch {
		case !ok:
			t.Fatalf("after round %d: replayed partition %d offset %d, which was never appended", round, k.p, k.off)
		case present[k]:
			t.Fatalf("after round %d: partition %d offset %d replayed twice", round, k.p, k.off)
		case m.closed[id]:
			t.Fatalf("after round %d: partition %d offset %d replayed from window %d, closed", round, k.p, k.off, id)
		case !sameEntry(e, crashEntry(k.p, k.off, id)):
			t.Fatalf("after round %d: partition %d offset %d replayed as %+v", round, k.p, k.off, e)
		}
		if prev, ok := last[k.p]; ok && k.off <= prev {
			t.Fatalf("after round %d: partition %d offset %d replayed after %d", round, k.p, k.off, prev)
		}
		last[k.p] = k.off
		present[k] = true
		windowsPresent[id] = true
	}
	for k, id := range m.announced {
		if m.acked[k] && !present[k] && !m.closed[id] && !m.gcIntent[id] {
			t.Fatalf("after round %d: acknowledged partition %d offset %d of open window %d was not replayed", round, k.p, k.off, id)
		}
		if m.acked[k] && rec.LastOffsets[k.p] < k.off {
			t.Fatalf("after round %d: LastOffsets[%d] = %d, below acknowledged offset %d", round, k.p, rec.LastOffsets[k.p], k.off)
		}
	}
	if rec.Watermark.Before(m.gcMark) {
		t.Fatalf("after round %d: watermark %v, below the acknowledged GC watermark %v", round, rec.Watermark, m.gcMark)
	}
	// What this restart found is the state from now on: entries of a batch
	// killed in flight that survived count as appended, the others never
	// will be; a window whose GC was in flight is closed unless its entries
	// are still there.
	for k := range m.announced {
		switch {
		case m.acked[k]:
		case present[k]:
			m.acked[k] = true
			m.inflightKept++
		default:
			delete(m.announced, k)
			m.inflightLost++
		}
	}
	for id := range m.gcIntent {
		if !windowsPresent[id] {
			m.closed[id] = true
		}
	}
	clear(m.gcIntent)
	if rec.Repaired != nil {
		m.repairs++
		t.Logf("after round %d: cut a torn tail: %+v", round, *rec.Repaired)
	}
	return len(present)
}

// reopenChild appends batches to the log in WAL_TEST_DIR, which the parent
// closed cleanly, from the offset after the last one it holds, printing
// each acknowledged Append, until killed.
func reopenChild() {
	w, err := Open(os.Getenv("WAL_TEST_DIR"), SegmentSize(16<<10), CompactEvery(0))
	if err != nil {
		crashtest.Fail("open: %v", err)
	}
	next := int64(0)
	if off, ok := w.Recovered().LastOffsets[0]; ok {
		next = off + 1
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 5))
	for {
		n := 1 + rng.IntN(40)
		batch := make([]Entry, n)
		for i := range batch {
			batch[i] = crashEntry(0, next+int64(i), 0)
		}
		if err := w.Append(ctx, batch...); err != nil {
			crashtest.Fail("append: %v", err)
		}
		next += int64(n)
		crashtest.Printf("A %d", next)
	}
}

// TestCrashAfterCleanReopen: a log closed cleanly keeps its clean-close
// record while a later run appends to it, so a kill of that run leaves a
// record naming an entry before the torn batch. Each round the parent
// opens the log as a restart would (every acknowledged entry is replayed,
// a torn tail past the record is cut), closes it cleanly, and starts a
// child that appends until killed at a random moment.
func TestCrashAfterCleanReopen(t *testing.T) {
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	dir := t.TempDir()
	gen := filepath.Join(dir, genName(1))
	closeT(t, openT(t, dir, SegmentSize(16<<10), CompactEvery(0)))
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 6))
	acked, repairs := int64(0), 0
	for round := range rounds {
		marker, err := readClosed(gen)
		if err != nil || marker == 0 {
			t.Fatalf("round %d: clean-close record %d, %v", round, marker, err)
		}
		child := crashtest.Start(t, "reopen", "WAL_TEST_DIR="+dir)
		child.WaitLine("", 30*time.Second)
		time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
		lines := child.Kill()
		for _, line := range lines {
			f := strings.Fields(line)
			if f[0] != "A" {
				t.Fatalf("round %d: child: %s", round, line)
			}
			acked = int64(crashtest.Atoi(f[1]))
		}
		if len(lines) == 0 {
			t.Fatalf("round %d: the child acknowledged nothing", round)
		}
		if m, _ := readClosed(gen); m != marker {
			t.Fatalf("round %d: the killed child changed the clean-close record %d -> %d", round, marker, m)
		}
		w, err := Open(dir, SegmentSize(16<<10), CompactEvery(0))
		if err != nil {
			t.Fatalf("round %d: open after the kill (clean-close record at entry %d): %v", round, marker, err)
		}
		rec := w.Recovered()
		if rec.Clean {
			t.Fatalf("round %d: a log appended to after its clean close is reported clean", round)
		}
		if r := rec.Repaired; r != nil {
			repairs++
			if r.Index <= marker {
				t.Fatalf("round %d: cut from entry %d, at or below the clean-close record %d", round, r.Index, marker)
			}
		}
		n := int64(0)
		for e, err := range w.Replay() {
			if err != nil {
				t.Fatalf("round %d: replay: %v", round, err)
			}
			if !sameEntry(e, crashEntry(0, n, 0)) {
				t.Fatalf("round %d: entry %d replayed as %+v", round, n, e)
			}
			n++
		}
		if n < acked {
			t.Fatalf("round %d: replayed %d entries, %d were acknowledged", round, n, acked)
		}
		acked = n // what survived of the batch in flight counts from now on
		closeT(t, w)
	}
	t.Logf("%d rounds: %d entries, %d torn tails cut past a clean-close record", rounds, acked, repairs)
}
