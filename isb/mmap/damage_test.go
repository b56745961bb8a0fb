package mmap

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/runnel-dev/runnel/internal/crashtest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// The damage table: each row damages a topic directory after a clean close
// and after a crash (a copy of the directory taken while the topic was
// open, its producer checkpoint behind the log), reopens it and checks
// exactly what is readable. No row may lose an intact record without an
// error naming it: every offset below the tail reads as the original item,
// or as a *CorruptError naming the damaged segment file and byte.

const (
	damageItems   = 1000
	damageSegment = 16 << 10 // several segments for damageItems
	damageCommit  = 100
)

// damageTopic builds the table's topic: damageItems items in partition 0,
// group g committed at damageCommit, closed cleanly or copied as a crash
// would leave it.
func damageTopic(t *testing.T, crash bool) string {
	t.Helper()
	dir := t.TempDir()
	b := open(t, dir, 1, SegmentSize(damageSegment))
	appendItems(t, b.Partition(0), 0, damageItems, 10)
	if err := b.Partition(0).Commit(bg, "g", damageCommit); err != nil {
		t.Fatal(err)
	}
	if crash {
		snap := snapshot(t, dir)
		v, err := readCheckpoint(file(snap, producerFile), kindProducer)
		if err != nil || v[0] >= damageItems-10 || v[4] != 0 {
			t.Fatalf("crash copy: producer checkpoint %v, %v; the table needs it behind the active segment's records", v, err)
		}
		b.Close()
		return snap
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// outcome is what reopening a damaged directory must give.
type outcome struct {
	openErr string // "" (opens) or the base name of the file a *CorruptError names
	tail    int64
	lost    []int64 // offsets that read as a *CorruptError naming lostIn
	lostIn  string
	keep    []string // files recovery must leave in place
	log     string   // a message the first open must log
	commit  int64    // the commit of g (0: damageCommit)
}

func (o outcome) logs(msg string) outcome { o.log = msg; return o }

func opens(tail int64, lostIn string, lost ...int64) outcome {
	return outcome{tail: tail, lost: lost, lostIn: lostIn}
}

func fails(file string) outcome { return outcome{openErr: file} }

// layout is where the records of the table's topic lie: segment files in
// order, with their records.
type layout struct {
	segs []string // base names, ascending
	recs map[string][]placedRecord
}

func (l layout) sealed() string { return l.segs[1] }
func (l layout) active() string { return l.segs[len(l.segs)-1] }

func TestDamageTable(t *testing.T) {
	const n = damageItems
	type row struct {
		name string
		// damage damages dir and returns the outcome after a clean close
		// and after a crash.
		damage func(t *testing.T, dir string, l layout) (clean, crash outcome)
	}
	rows := []row{
		{"flipped payload byte in the active segment, intact records after it", func(t *testing.T, dir string, l layout) (outcome, outcome) {
			r := l.recs[l.active()][len(l.recs[l.active()])/2]
			flipByte(t, file(dir, r.file), r.from+recordHeaderSize+1)
			o := opens(n, r.file, r.offset)
			return o, o.logs("damaged records kept")
		}},
		{"flipped payload byte in a sealed segment", func(t *testing.T, dir string, l layout) (outcome, outcome) {
			r := l.recs[l.sealed()][3]
			flipByte(t, file(dir, r.file), r.from+recordHeaderSize+2)
			o := opens(n, r.file, r.offset)
			return o, o
		}},
		{"flipped length field, intact records after it", func(t *testing.T, dir string, l layout) (outcome, outcome) {
			// The length cannot be trusted: the reader finds the next
			// record by searching for an intact one.
			r := l.recs[l.active()][5]
			flipByte(t, file(dir, r.file), r.from+1)
			o := opens(n, r.file, r.offset)
			return o, o
		}},
		{"flipped byte in the last record", func(t *testing.T, dir string, l layout) (outcome, outcome) {
			recs := l.recs[l.active()]
			r := recs[len(recs)-1]
			flipByte(t, file(dir, r.file), r.from+recordHeaderSize+1)
			// Clean: producer.offset covers it, so it was flushed: damaged,
			// kept, reported. Crash: past producer.offset with nothing
			// after it, as a torn write leaves it: cut (and logged).
			return opens(n, r.file, r.offset).logs("damaged record before the producer checkpoint"), opens(n-1, "").logs("cut a torn record")
		}},
		{"flipped byte in the last record, which a group committed", func(t *testing.T, dir string, l layout) (outcome, outcome) {
			recs := l.recs[l.active()]
			r := recs[len(recs)-1]
			flipByte(t, file(dir, r.file), r.from+recordHeaderSize+1)
			patchCheckpoint(t, file(dir, filepath.Join(offsetsDir, "g", consumerFile)), kindConsumer, func(v *checkpoint) { v[0] = n })
			// A commit flushes what it covers: the record was written
			// whole, so even past producer.offset it is damage, not a
			// torn write.
			o := opens(n, r.file, r.offset)
			o.commit = n
			return o, o
		}},
		{"torn last record: its second half never written", func(t *testing.T, dir string, l layout) (outcome, outcome) {
			recs := l.recs[l.active()]
			r := recs[len(recs)-1]
			zeroBytes(t, file(dir, r.file), (r.from+r.to)/2, r.to)
			return opens(n, r.file, r.offset), opens(n-1, "")
		}},
		{"last segment truncated mid-record", func(t *testing.T, dir string, l layout) (outcome, outcome) {
			// Past the smallest segment size, so only the size recorded
			// in the header tells.
			recs := l.recs[l.active()]
			i := slices.IndexFunc(recs, func(r placedRecord) bool { return r.from > MinSegmentSize })
			if i < 0 || i == len(recs)-1 {
				t.Fatal("the active segment holds too few records")
			}
			r := recs[i]
			if err := os.Truncate(file(dir, r.file), r.from+7); err != nil {
				t.Fatal(err)
			}
			o := fails(r.file)
			return o, o
		}},
		{"zeroed last 4 KiB of a sealed segment", func(t *testing.T, dir string, l layout) (outcome, outcome) {
			name := l.sealed()
			from := int64(damageSegment - 4096)
			zeroBytes(t, file(dir, name), from, damageSegment)
			var lost []int64
			for _, r := range l.recs[name] {
				if r.to > from {
					lost = append(lost, r.offset)
				}
			}
			if len(lost) < 10 {
				t.Fatalf("only %d records in the zeroed range", len(lost))
			}
			o := opens(n, name, lost...)
			return o, o
		}},
		{"flipped segment header byte", func(t *testing.T, dir string, l layout) (outcome, outcome) {
			flipByte(t, file(dir, l.sealed()), 9)
			o := fails(l.sealed())
			return o, o
		}},
		{"deleted middle segment", func(t *testing.T, dir string, l layout) (outcome, outcome) {
			if err := os.Remove(file(dir, l.sealed())); err != nil {
				t.Fatal(err)
			}
			o := fails(l.sealed())
			return o, o
		}},
		{"stray files", func(t *testing.T, dir string, l layout) (outcome, outcome) {
			for _, p := range strayFiles(dir) {
				if err := os.WriteFile(p, []byte("not runnel's"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			o := opens(n, "").logs("did not write")
			o.keep = strayFiles(dir)
			return o, o
		}},
	}
	// Each checkpoint missing, then damaged: the producer's and the
	// earliest offset are rebuilt from the checksummed records, a group's
	// commit cannot be and fails the open.
	for _, c := range []struct {
		path string // below the partition directory
		want outcome
	}{
		{producerFile, opens(n, "").logs("rebuilding producer.offset")},
		{earliestFile, opens(n, "").logs("rebuilding earliest.offset")},
		{filepath.Join(offsetsDir, "g", consumerFile), fails(consumerFile)},
	} {
		name := filepath.Base(c.path)
		rows = append(rows,
			row{name + " missing", func(t *testing.T, dir string, l layout) (outcome, outcome) {
				if err := os.Remove(file(dir, c.path)); err != nil {
					t.Fatal(err)
				}
				return c.want, c.want
			}},
			row{name + " damaged", func(t *testing.T, dir string, l layout) (outcome, outcome) {
				flipByte(t, file(dir, c.path), 20)
				return c.want, c.want
			}})
	}
	for _, row := range rows {
		for _, crash := range []bool{false, true} {
			mode := "after clean close"
			if crash {
				mode = "after crash"
			}
			t.Run(row.name+"/"+mode, func(t *testing.T) {
				dir := damageTopic(t, crash)
				l := layoutOf(t, dir)
				clean, crashed := row.damage(t, dir, l)
				want := clean
				if crash {
					want = crashed
				}
				checkOutcome(t, dir, want)
			})
		}
	}
}

// checkOutcome opens dir and checks want; a directory that opens is then
// appended to, closed and opened again, and must hold the same plus the
// new items: a damaged record never breaks the log for later writes.
func checkOutcome(t *testing.T, dir string, want outcome) {
	t.Helper()
	checkInspect(t, dir, want)
	core, logs := observer.New(zap.InfoLevel)
	b, err := openErr(dir, 1, SegmentSize(damageSegment), Logger(zap.New(core)))
	if want.log != "" && logs.FilterMessageSnippet(want.log).Len() == 0 {
		t.Errorf("open did not log %q; logged %v", want.log, logs.All())
	}
	if want.openErr != "" {
		ce := wantCorrupt(t, err, want.openErr)
		if ce.Reason == "" {
			t.Fatalf("error without a reason: %v", err)
		}
		t.Logf("open: %v", err)
		return
	}
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	checkReadable(t, b, want)
	appendItems(t, b.Partition(0), int(want.tail), int(want.tail)+5, 5)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = openErr(dir, 1, SegmentSize(damageSegment))
	if err != nil {
		t.Fatalf("reopen after appending: %v", err)
	}
	defer b.Close()
	want.tail += 5
	checkReadable(t, b, want)
	for _, p := range want.keep {
		if !exists(p) {
			t.Errorf("recovery deleted %s, which it did not write", p)
		}
	}
	for _, f := range []string{producerFile, earliestFile} {
		if !exists(file(dir, f)) {
			t.Errorf("%s was not rebuilt", f)
		}
	}
}

// checkReadable reads every offset one by one and in batches: lost offsets
// are a *CorruptError naming want.lostIn, every other one its item.
func checkReadable(t *testing.T, b *Backend[string], want outcome) {
	t.Helper()
	l := b.Partition(0)
	if l.Head() != 0 || l.Tail() != want.tail {
		t.Fatalf("log [%d, %d), want [0, %d)", l.Head(), l.Tail(), want.tail)
	}
	if want.commit == 0 {
		want.commit = damageCommit
	}
	if c, ok := committed(t, l, "g"); !ok || c != want.commit {
		t.Fatalf("commit of g = %d, %v; want %d", c, ok, want.commit)
	}
	for off := int64(0); off < want.tail; off++ {
		_, got, err := l.Read(bg, off, 1, nil)
		if slices.Contains(want.lost, off) {
			ce := wantCorrupt(t, err, want.lostIn)
			if ce.Offset < segmentHeaderSize {
				t.Fatalf("offset %d: error names byte %d: %v", off, ce.Offset, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("offset %d, intact, reads as %v", off, err)
		}
		if got[0] != item(int(off)) {
			t.Fatalf("offset %d holds %q, want %q", off, got[0], item(int(off)))
		}
	}
	// Batches stop short of a damaged record and never skip one.
	for off := int64(0); off < want.tail; {
		_, got, err := l.Read(bg, off, 7, nil)
		if err != nil {
			if !slices.Contains(want.lost, off) {
				t.Fatalf("batch read at %d: %v", off, err)
			}
			off++
			continue
		}
		for i, g := range got {
			o := off + int64(i)
			if slices.Contains(want.lost, o) || g != item(int(o)) {
				t.Fatalf("batch read at %d: offset %d holds %q", off, o, g)
			}
		}
		off += int64(len(got))
	}
}

// layoutOf maps the records of partition 0 of dir.
func layoutOf(t *testing.T, dir string) layout {
	l := layout{recs: map[string][]placedRecord{}}
	for _, r := range recordMap(t, dir) {
		if len(l.segs) == 0 || l.segs[len(l.segs)-1] != r.file {
			l.segs = append(l.segs, r.file)
		}
		l.recs[r.file] = append(l.recs[r.file], r)
	}
	if len(l.segs) < 3 {
		t.Fatalf("%d segments with records, the table needs 3", len(l.segs))
	}
	return l
}

// strayFiles are files runnel did not write, in every directory it owns.
func strayFiles(dir string) []string {
	return []string{
		filepath.Join(dir, testTopic, "README"),
		filepath.Join(dir, testTopic, "partition-7.tmp"),
		file(dir, "notes.tmp"),
		file(dir, "notes.txt"),
		file(dir, segmentFileName(0)+".bak"),
		file(dir, filepath.Join(offsetsDir, "junk")),
	}
}

func flipByte(t *testing.T, path string, at int64) {
	t.Helper()
	crashtest.FlipByte(t, path, at, 0x5a)
}

func zeroBytes(t *testing.T, path string, from, to int64) {
	t.Helper()
	patchFile(t, path, from, make([]byte, to-from))
}
