package wal

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/internal/crashtest"
	"github.com/runnel-dev/runnel/internal/crc32c"
	tidwall "github.com/tidwall/wal"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// The damage table: a log of 40 batches of 5 messages in 4 KiB segments is
// damaged as each case says and opened, in three states: after a crash (no
// clean-close record), after a crash that followed a clean Close and a
// reopen that appended the last batch (a CLOSED record naming entry 196,
// before that batch), and after a clean Close (CLOSED naming the last
// entry). Repaired cases say how many of the 200 messages survive (always
// a prefix, in order, checked entry by entry) and what was cut, which
// Recovered reports and Open logs; refused ones which error, file and entry
// index, and that the directory did not change.

const (
	tableBatches = 40
	tableBatch   = 5
	tableSeg     = 4096
)

// The states a table log is damaged in.
const (
	afterCrash       = "after a crash"
	afterCrashReopen = "after a crash following a clean reopen"
	afterClean       = "after a clean close"
)

// tableLog is the undamaged log the cases start from.
type tableLog struct {
	dir  string
	gen  string        // the generation directory
	segs []segmentFile // its segments
	want []Entry
}

func tableBatchEntries(b int) []Entry {
	var batch []Entry
	for i := range tableBatch {
		seq := int64(b*tableBatch + i)
		e := msg(int32(seq%2), seq, b/10)
		// Padded so that each entry keeps its size from before
		// message ids (version 1), and the cases their layout.
		e.Value = append(e.Value, strings.Repeat("-", 60-1-len(e.ID))...)
		batch = append(batch, e)
	}
	return batch
}

// buildTableLog builds the table's log in state (afterCrash when empty).
func buildTableLog(t *testing.T, state ...string) *tableLog {
	dir := t.TempDir()
	w := openT(t, dir, SegmentSize(tableSeg))
	var want []Entry
	reopen := len(state) > 0 && state[0] == afterCrashReopen
	for b := range tableBatches {
		if reopen && b == tableBatches-1 {
			closeT(t, w)
			w = openT(t, dir, SegmentSize(tableSeg))
			if !w.Recovered().Clean {
				t.Fatalf("reopen after a clean close: %+v", w.Recovered())
			}
		}
		batch := tableBatchEntries(b)
		appendT(t, w, batch...)
		want = append(want, batch...)
	}
	gen := filepath.Join(dir, genName(1))
	if reopen {
		// What a kill leaves: the appends were fsync'd, Close never ran.
		img := t.TempDir()
		if err := os.CopyFS(img, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		closeT(t, w)
		dir, gen = img, filepath.Join(img, genName(1))
		if m, err := readClosed(gen); err != nil || m != uint64(len(want)-tableBatch+1) {
			t.Fatalf("crash image records a clean close at entry %d (%v), want %d", m, err, len(want)-tableBatch+1)
		}
	} else {
		closeT(t, w)
		if len(state) == 0 || state[0] == afterCrash {
			crashImage(t, gen)
		}
	}
	segs, _, err := listSegments(gen)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 5 {
		t.Fatalf("want at least 5 segments, got %d", len(segs))
	}
	return &tableLog{dir: dir, gen: gen, segs: segs, want: want}
}

// copy returns a copy of l in a directory of t's.
func (l *tableLog) copy(t *testing.T) *tableLog {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(l.dir)); err != nil {
		t.Fatal(err)
	}
	c := &tableLog{dir: dir, gen: filepath.Join(dir, filepath.Base(l.gen)), want: l.want}
	for _, s := range l.segs {
		c.segs = append(c.segs, segmentFile{path: filepath.Join(c.gen, filepath.Base(s.path)), first: s.first})
	}
	return c
}

// crashImage turns a generation closed cleanly into what a crash leaves:
// the same files without the clean-close record.
func crashImage(t *testing.T, gen string) {
	t.Helper()
	if err := os.Remove(filepath.Join(gen, closedFile)); err != nil {
		t.Fatal(err)
	}
}

// frame is an entry's position on disk: message m (0-based) is index m+2.
type frame struct {
	file     string
	pos, end int // frame bytes in file
	data     int // where the entry starts (after the uvarint length)
}

func (l *tableLog) frame(t *testing.T, index uint64) frame {
	t.Helper()
	for i, s := range l.segs {
		if i+1 < len(l.segs) && l.segs[i+1].first <= index {
			continue
		}
		buf, err := os.ReadFile(s.path)
		if err != nil {
			t.Fatal(err)
		}
		p := 0
		for idx := s.first; ; idx++ {
			e, end, ok := frameAt(buf, p)
			if !ok {
				t.Fatalf("entry %d not in %s", index, s.path)
			}
			if idx == index {
				return frame{file: s.path, pos: p, end: end, data: end - len(e)}
			}
			p = end
		}
	}
	t.Fatalf("no entry %d", index)
	return frame{}
}

// segOf returns the number of the segment holding index.
func (l *tableLog) segOf(index uint64) int {
	for i := len(l.segs) - 1; i >= 0; i-- {
		if l.segs[i].first <= index {
			return i
		}
	}
	return -1
}

func flipByte(t *testing.T, path string, pos int) {
	t.Helper()
	crashtest.FlipByte(t, path, int64(pos), 0x20)
}

func truncateTo(t *testing.T, path string, size int) {
	t.Helper()
	if err := os.Truncate(path, int64(size)); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t *testing.T, path string) int {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(info.Size())
}

// setVersion rewrites an entry's version byte with a matching crc.
func setVersion(t *testing.T, f frame, v byte) {
	t.Helper()
	b, err := os.ReadFile(f.file)
	if err != nil {
		t.Fatal(err)
	}
	e := b[f.data:f.end]
	e[4] = v
	binary.LittleEndian.PutUint32(e, crc32c.Checksum(e[4:]))
	if err := os.WriteFile(f.file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// outcome is what Open must do with a damaged log.
type outcome struct {
	// Repaired (or clean) opens: messages that survive, whether a tail is
	// cut, and how many intact entries are cut with it.
	survive int
	cut     bool
	dropped int
	// Refused opens: the error, and the file and entry index it names
	// (index nil: any).
	refuse error
	file   func(l *tableLog) string
	index  func(l *tableLog) uint64
}

func refused(err error, file func(*tableLog) string, index func(*tableLog) uint64) outcome {
	return outcome{refuse: err, file: file, index: index}
}

func entry(i uint64) func(*tableLog) uint64 { return func(*tableLog) uint64 { return i } }

func lastSegment(l *tableLog) string { return l.segs[len(l.segs)-1].path }

func segmentOf(i uint64) func(*tableLog) string {
	return func(l *tableLog) string { return l.segs[l.segOf(i)].path }
}

type damageCase struct {
	name   string
	damage func(t *testing.T, l *tableLog)
	crash  outcome  // after a crash, also one that followed a clean reopen
	clean  *outcome // after a clean close, when it differs
	only   string   // run in this state alone
	// extraOK checks more after a successful open.
	extraOK func(t *testing.T, l *tableLog)
}

func damageCases() []damageCase {
	last := uint64(tableBatches*tableBatch + 1) // index of the last message
	lastBatchInLastSegment := func(t *testing.T, l *tableLog) {
		if l.segOf(last-tableBatch+1) != len(l.segs)-1 {
			t.Fatal("the last segment must hold the whole last batch")
		}
	}
	return []damageCase{
		{name: "clean", damage: func(*testing.T, *tableLog) {}, crash: outcome{survive: 200}},
		{name: "torn tail: last entry cut short", crash: outcome{survive: 199, cut: true},
			clean: &outcome{refuse: ErrCorrupt, file: lastSegment, index: entry(last)},
			damage: func(t *testing.T, l *tableLog) {
				f := l.frame(t, last)
				truncateTo(t, f.file, f.end-5)
			}},
		{name: "torn tail: last frame's length cut", crash: outcome{survive: 199, cut: true},
			clean: &outcome{refuse: ErrCorrupt, file: lastSegment, index: entry(last)},
			damage: func(t *testing.T, l *tableLog) {
				f := l.frame(t, last)
				truncateTo(t, f.file, f.pos+1)
			}},
		// After a clean close no acknowledged entry is in the zeros:
		// cutting them loses nothing.
		{name: "torn tail: zeros after the log (size persisted, data not)", crash: outcome{survive: 200, cut: true},
			damage: func(t *testing.T, l *tableLog) {
				p := l.segs[len(l.segs)-1].path
				truncateTo(t, p, fileSize(t, p)+300)
			}},
		{name: "flipped byte in the last batch, its later entries intact (power loss)", crash: outcome{survive: 197, cut: true, dropped: 2},
			clean: &outcome{refuse: ErrCorrupt, file: lastSegment, index: entry(last - 2)},
			damage: func(t *testing.T, l *tableLog) {
				f := l.frame(t, last-2)
				flipByte(t, f.file, f.data+20)
			}},
		{name: "flipped byte in the last batch's first entry, the rest intact", crash: outcome{survive: 195, cut: true, dropped: 4},
			clean: &outcome{refuse: ErrCorrupt, file: lastSegment, index: entry(last - 4)},
			damage: func(t *testing.T, l *tableLog) {
				lastBatchInLastSegment(t, l)
				f := l.frame(t, last-4)
				flipByte(t, f.file, f.end-1)
			}},
		// After a crash this looks like a crash before the batch was
		// written; after a clean close the record says what is missing.
		{name: "last batch removed at an entry boundary", crash: outcome{survive: 195},
			clean: &outcome{refuse: ErrCorrupt, file: lastSegment, index: entry(last - 4)},
			damage: func(t *testing.T, l *tableLog) {
				lastBatchInLastSegment(t, l)
				f := l.frame(t, last-4)
				truncateTo(t, f.file, f.pos)
			}},
		{name: "flipped byte mid-log in the last segment, later batches intact", crash: refused(ErrCorrupt, lastSegment, func(l *tableLog) uint64 { return l.segs[len(l.segs)-1].first }),
			damage: func(t *testing.T, l *tableLog) {
				f := l.frame(t, l.segs[len(l.segs)-1].first)
				if f.file != l.segs[len(l.segs)-1].path || l.segOf(last-tableBatch) != len(l.segs)-1 {
					t.Fatal("the last segment must hold more than the last batch")
				}
				flipByte(t, f.file, f.data+16)
			}},
		{name: "flipped byte in an earlier segment", crash: refused(ErrCorrupt, segmentOf(40), entry(40)), damage: func(t *testing.T, l *tableLog) {
			f := l.frame(t, 40)
			flipByte(t, f.file, f.data+30)
		}},
		{name: "flipped frame length in an earlier segment", crash: refused(ErrCorrupt, segmentOf(40), entry(40)), damage: func(t *testing.T, l *tableLog) {
			f := l.frame(t, 40)
			flipByte(t, f.file, f.pos)
		}},
		{name: "damaged checkpoint (entry 1)", crash: refused(ErrCorrupt, segmentOf(1), entry(1)), damage: func(t *testing.T, l *tableLog) {
			flipByte(t, l.segs[0].path, 3)
		}},
		{name: "earlier segment truncated mid-entry", crash: refused(ErrCorrupt, func(l *tableLog) string { return l.segs[1].path }, func(l *tableLog) uint64 { return l.segs[2].first - 1 }),
			damage: func(t *testing.T, l *tableLog) {
				truncateTo(t, l.segs[1].path, fileSize(t, l.segs[1].path)-7)
			}},
		{name: "earlier segment truncated at an entry boundary", crash: refused(ErrCorrupt, func(l *tableLog) string { return l.segs[2].path }, func(l *tableLog) uint64 { return l.segs[2].first - 1 }),
			damage: func(t *testing.T, l *tableLog) {
				f := l.frame(t, l.segs[2].first-1)
				truncateTo(t, f.file, f.pos)
			}},
		{name: "middle segment deleted", crash: refused(ErrCorrupt, func(l *tableLog) string { return l.segs[3].path }, func(l *tableLog) uint64 { return l.segs[2].first }),
			damage: func(t *testing.T, l *tableLog) {
				os.Remove(l.segs[2].path)
			}},
		{name: "newest segment deleted", crash: refused(ErrCorrupt, func(l *tableLog) string { return l.gen }, nil), damage: func(t *testing.T, l *tableLog) {
			os.Remove(l.segs[len(l.segs)-1].path)
		}},
		{name: "first segment deleted", crash: refused(ErrCorrupt, func(l *tableLog) string { return l.gen }, nil), damage: func(t *testing.T, l *tableLog) {
			os.Remove(l.segs[0].path)
		}},
		{name: "live generation deleted (its metadata record kept)", crash: refused(ErrCorrupt, func(l *tableLog) string { return l.dir }, nil), damage: func(t *testing.T, l *tableLog) {
			os.RemoveAll(l.gen)
		}},
		{name: "metadata record: flipped byte", crash: refused(ErrCorrupt, func(l *tableLog) string { return filepath.Join(l.dir, metaFile) }, nil), damage: func(t *testing.T, l *tableLog) {
			flipByte(t, filepath.Join(l.dir, metaFile), metaHeaderSize)
		}},
		{name: "metadata record: truncated", crash: refused(ErrCorrupt, func(l *tableLog) string { return filepath.Join(l.dir, metaFile) }, nil), damage: func(t *testing.T, l *tableLog) {
			truncateTo(t, filepath.Join(l.dir, metaFile), 10)
		}},
		{name: "metadata record missing (a log of an earlier version: adopted)", crash: outcome{survive: 200}, damage: func(t *testing.T, l *tableLog) {
			os.Remove(filepath.Join(l.dir, metaFile))
		}, extraOK: func(t *testing.T, l *tableLog) {
			if _, err := os.Stat(filepath.Join(l.dir, metaFile)); err != nil {
				t.Errorf("no metadata record written: %v", err)
			}
		}},
		{name: "stray tidwall/wal .START file", crash: refused(ErrCorrupt, func(l *tableLog) string { return l.segs[1].path + ".START" }, nil), damage: func(t *testing.T, l *tableLog) {
			os.WriteFile(l.segs[1].path+".START", []byte("x"), 0o644)
		}},
		{name: "empty next generation directory beside the live one", crash: refused(ErrCorrupt, func(l *tableLog) string { return filepath.Join(l.dir, genName(2)) }, nil),
			damage: func(t *testing.T, l *tableLog) {
				os.Mkdir(filepath.Join(l.dir, genName(2)), 0o755)
			}},
		{name: "damaged clean-close record", only: afterClean, crash: refused(ErrCorrupt, func(l *tableLog) string { return filepath.Join(l.gen, closedFile) }, nil),
			damage: func(t *testing.T, l *tableLog) {
				flipByte(t, filepath.Join(l.gen, closedFile), 2)
			}},
		{name: "stray files and leftovers of a compaction", crash: outcome{survive: 200}, damage: func(t *testing.T, l *tableLog) {
			os.WriteFile(filepath.Join(l.gen, "notes.txt"), []byte("x"), 0o644)
			os.WriteFile(filepath.Join(l.dir, "README"), []byte("x"), 0o644)
			os.MkdirAll(filepath.Join(l.dir, genName(2)+tmpSuffix), 0o755)
			os.WriteFile(filepath.Join(l.dir, genName(2)+tmpSuffix, "00000000000000000001"), []byte("half"), 0o644)
			// An older generation a switch left behind: gen-1 becomes it.
			if err := os.Rename(l.gen, filepath.Join(l.dir, genName(3))); err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(l.gen, 0o755)
		}, extraOK: func(t *testing.T, l *tableLog) {
			for _, gone := range []string{genName(1), genName(2) + tmpSuffix} {
				if _, err := os.Stat(filepath.Join(l.dir, gone)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s left in place: %v", gone, err)
				}
			}
			for _, kept := range []string{"README", genName(3) + "/notes.txt"} {
				if _, err := os.Stat(filepath.Join(l.dir, kept)); err != nil {
					t.Errorf("%s removed: %v", kept, err)
				}
			}
		}},
		{name: "empty newest segment (crash right after a rollover)", crash: outcome{survive: 200}, damage: func(t *testing.T, l *tableLog) {
			os.WriteFile(filepath.Join(l.gen, segmentName(last+1)), nil, 0o644)
		}},
		{name: "format version 1 (before message ids) mid-log", crash: refused(ErrVersion, segmentOf(100), entry(100)), damage: func(t *testing.T, l *tableLog) {
			setVersion(t, l.frame(t, 100), 1)
		}},
		{name: "wrong version at the tail (intact: not cut)", crash: refused(ErrVersion, lastSegment, entry(last)), damage: func(t *testing.T, l *tableLog) {
			setVersion(t, l.frame(t, last), 9)
		}},
	}
}

func TestDamageTable(t *testing.T) {
	for _, state := range []string{afterCrash, afterCrashReopen, afterClean} {
		t.Run(state, func(t *testing.T) {
			template := buildTableLog(t, state)
			for _, c := range damageCases() {
				if c.only != "" && c.only != state {
					continue
				}
				want := c.crash
				if state == afterClean && c.clean != nil {
					want = *c.clean
				}
				t.Run(c.name, func(t *testing.T) {
					l := template.copy(t)
					c.damage(t, l)
					checkDamaged(t, l, want, c.extraOK)
				})
			}
		})
	}
}

// checkDamaged opens the damaged log l and checks the outcome.
func checkDamaged(t *testing.T, l *tableLog, want outcome, extraOK func(*testing.T, *tableLog)) {
	t.Helper()
	before := snapshotDir(t, l.dir)
	checkInspected(t, l, want)
	core, logs := observer.New(zap.InfoLevel)
	w, err := Open(l.dir, SegmentSize(tableSeg), Logger(zap.New(core)))
	if want.refuse != nil {
		if err == nil {
			w.Close()
			t.Fatalf("Open succeeded, want %v", want.refuse)
		}
		if !errors.Is(err, want.refuse) {
			t.Fatalf("Open: %v, want %v", err, want.refuse)
		}
		file, idx := "", uint64(0)
		if ce, ok := errors.AsType[*CorruptError](err); ok {
			file, idx = ce.File, ce.Index
		} else if ve, ok := errors.AsType[*VersionError](err); ok {
			file, idx = ve.File, ve.Index
		}
		if want := want.file(l); file != want {
			t.Errorf("error names %s, want %s (%v)", file, want, err)
		}
		if want.index != nil && idx != want.index(l) {
			t.Errorf("error names entry %d, want %d (%v)", idx, want.index(l), err)
		}
		if after := snapshotDir(t, l.dir); after != before {
			t.Errorf("a refused Open changed the directory:\n%s\n->\n%s", before, after)
		}
		t.Logf("refused: %v", err)
		return
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	rec := w.Recovered()
	if want.cut != (rec.Repaired != nil) {
		t.Fatalf("repaired %+v, want a cut: %v", rec.Repaired, want.cut)
	}
	cuts := logs.FilterMessageSnippet("cut a torn tail").All()
	if r := rec.Repaired; r != nil {
		if r.Index != uint64(want.survive)+2 || r.Dropped != want.dropped || len(r.Cut) != want.dropped {
			t.Errorf("repair %+v: want cut at entry %d with %d intact entries dropped", r, want.survive+2, want.dropped)
		}
		for i, c := range r.Cut {
			if m := l.want[len(l.want)-want.dropped+i]; c.GC || c.Partition != m.Partition || c.Offset != m.Offset {
				t.Errorf("cut entry %d is %+v, want partition %d offset %d", i, c, m.Partition, m.Offset)
			}
		}
		if len(cuts) != 1 || cuts[0].Level != zap.WarnLevel || cuts[0].ContextMap()["entry"] != r.Index || cuts[0].ContextMap()["segment"] != r.File ||
			cuts[0].ContextMap()["intact entries cut"] != int64(want.dropped) {
			t.Errorf("logged %+v, want one warning of the cut at entry %d", logs.All(), r.Index)
		}
		t.Logf("repaired: %+v; logged %v", *r, cuts[0].ContextMap())
	} else if len(cuts) != 0 {
		t.Errorf("logged a cut without a repair: %+v", cuts)
	}
	checkEntries(t, replayAll(t, w), l.want[:want.survive])
	// The repaired log takes appends and opens again whole.
	more := msg(0, 1000, 9)
	appendT(t, w, more)
	closeT(t, w)
	w = openT(t, l.dir, SegmentSize(tableSeg))
	checkEntries(t, replayAll(t, w), append(l.want[:want.survive:want.survive], more))
	if !w.Recovered().Clean {
		t.Errorf("the reopen after a clean close is not clean: %+v", w.Recovered())
	}
	closeT(t, w)
	if extraOK != nil {
		extraOK(t, l)
	}
}

// snapshotDir lists every file under dir with its size and a checksum.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var sb strings.Builder
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		sb.WriteString(rel + " " + string(binary.LittleEndian.AppendUint32(nil, crc32.ChecksumIEEE(b))) + "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

func segmentName(index uint64) string { return filepath.Base(genName(index))[len(genPrefix):] }

// TestTidwallAloneRefusesTornTail shows why Open repairs before tidwall/wal
// opens: on the same torn segment tidwall/wal's own Open fails.
func TestTidwallAloneRefusesTornTail(t *testing.T) {
	l := buildTableLog(t)
	f := l.frame(t, uint64(tableBatches*tableBatch+1))
	truncateTo(t, f.file, f.end-5)
	if tl, err := tidwall.Open(l.gen, &tidwall.Options{SegmentSize: tableSeg}); err == nil {
		tl.Close()
		t.Fatal("tidwall/wal opened a torn tail")
	} else if !errors.Is(err, tidwall.ErrCorrupt) {
		t.Fatalf("tidwall/wal: %v", err)
	}
	w := openT(t, l.dir, SegmentSize(tableSeg))
	defer closeT(t, w)
	checkEntries(t, replayAll(t, w), l.want[:len(l.want)-1])
}

// TestTailHintFollowsRollover: after every batch the tail hint names the
// newest segment, so the mirror of tidwall/wal's rollover misses none.
func TestTailHintFollowsRollover(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir, SegmentSize(tableSeg), CompactEvery(0))
	defer closeT(t, w)
	gen := filepath.Join(dir, genName(1))
	rollovers := 0
	for b := range 150 {
		var batch []Entry
		for i := range 1 + b%13 {
			e := msg(0, int64(b*100+i), 0)
			e.Value = append(e.Value, strings.Repeat("z", b%200)...)
			batch = append(batch, e)
		}
		appendT(t, w, batch...)
		segs, hint, err := listSegments(gen)
		if err != nil {
			t.Fatal(err)
		}
		if newest := segs[len(segs)-1].first; hint != newest && !(hint == 0 && newest == 1) {
			t.Fatalf("after batch %d: hint %d, newest segment %d", b, hint, newest)
		}
		if int64(len(segs)) != w.Stats().Segments && len(segs) > 1 {
			t.Fatalf("after batch %d: %d segments, stats say %d", b, len(segs), w.Stats().Segments)
		}
		rollovers = len(segs) - 1
	}
	if rollovers < 10 {
		t.Fatalf("only %d rollovers", rollovers)
	}
}

// TestTornTwice: a crash cuts the last batch short, leaving a prefix of it;
// after the restart a second crash damages the head of the next batch, its
// other entries intact. Open must see the second as a torn tail too, which
// it can because the first Open ended the cut-short batch.
func TestTornTwice(t *testing.T) {
	l := buildTableLog(t)
	last := uint64(tableBatches*tableBatch + 1)
	f := l.frame(t, last-2) // third entry of the last batch: two survive
	truncateTo(t, f.file, f.pos+7)
	w := openT(t, l.dir, SegmentSize(tableSeg))
	if r := w.Recovered().Repaired; r == nil || r.Index != last-2 {
		t.Fatalf("first repair %+v", r)
	}
	survivors := l.want[:len(l.want)-3]
	checkEntries(t, replayAll(t, w), survivors)
	var next []Entry
	for i := range 5 {
		next = append(next, msg(1, int64(500+i), 9))
	}
	appendT(t, w, next...)
	closeT(t, w)
	crashImage(t, l.gen) // the second run crashed too
	// Damage the first entry of the new batch, wherever it is.
	segs, _, err := listSegments(l.gen)
	if err != nil {
		t.Fatal(err)
	}
	l.segs = segs
	first := uint64(0)
	for idx := last - 3; first == 0; idx++ {
		f = l.frame(t, idx)
		b, _ := os.ReadFile(f.file)
		var d decoder
		if r, err := d.decode(b[f.data:f.end]); err == nil && r.kind == kindMessage && r.msg.Offset == 500 {
			first = idx
		}
	}
	flipByte(t, f.file, f.end-2)
	w, err = Open(l.dir, SegmentSize(tableSeg))
	if err != nil {
		t.Fatalf("second Open: %v", err)
	}
	if first != last-1 {
		t.Fatalf("the new batch starts at entry %d, want %d: after the survivors and the GC event ending their batch", first, last-1)
	}
	defer closeT(t, w)
	if r := w.Recovered().Repaired; r == nil || r.Dropped != 4 {
		t.Fatalf("second repair %+v, want the whole new batch cut (4 intact entries dropped)", r)
	}
	checkEntries(t, replayAll(t, w), survivors)
}

// TestRefusedGenerationKeepsTheLiveOne: an empty next generation directory
// beside the live one (no compaction leaves one: it renames a complete
// gen-{n}.tmp into place) is refused, and the refusal changes nothing: the
// live generation is still there for the next Open once the operator
// removed the stray directory.
func TestRefusedGenerationKeepsTheLiveOne(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir)
	var want []Entry
	for i := range 30 {
		want = append(want, msg(int32(i%2), int64(i), 0))
	}
	appendT(t, w, want...)
	closeT(t, w)
	stray := filepath.Join(dir, genName(2))
	if err := os.Mkdir(stray, 0o755); err != nil {
		t.Fatal(err)
	}
	before := snapshotDir(t, dir)
	for range 2 {
		w, err := Open(dir)
		if err == nil {
			w.Close()
			t.Fatal("Open took an empty generation directory for the live one")
		}
		if ce, ok := errors.AsType[*CorruptError](err); !ok || ce.File != stray {
			t.Fatalf("Open: %v, want a *CorruptError naming %s", err, stray)
		}
		if after := snapshotDir(t, dir); after != before {
			t.Fatalf("a refused Open changed the directory:\n%s\n->\n%s", before, after)
		}
	}
	if err := os.Remove(stray); err != nil {
		t.Fatal(err)
	}
	w = openT(t, dir)
	defer closeT(t, w)
	checkEntries(t, replayAll(t, w), want)
}

// TestCleanCloseDamageIsCorruption is issue 18's case: 3 batches of 10
// closed cleanly, one byte flipped in the first entry of the last batch.
// After a clean close that batch was acknowledged: Open refuses with a
// *CorruptError naming the segment and entry and changes nothing. The same
// files left by a crash (a copy taken while the log was open, before Close)
// are a torn tail: the batch is cut, with its 9 intact entries.
func TestCleanCloseDamageIsCorruption(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir)
	var want []Entry
	for b := range 3 {
		var batch []Entry
		for i := range 10 {
			batch = append(batch, msg(0, int64(b*10+i), 0))
		}
		appendT(t, w, batch...)
		want = append(want, batch...)
	}
	crashed := t.TempDir()
	if err := os.CopyFS(crashed, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	closeT(t, w)
	const damaged = 22 // checkpoint, 20 messages, then the last batch
	for _, d := range []string{dir, crashed} {
		l := &tableLog{gen: filepath.Join(d, genName(1))}
		l.segs, _, _ = listSegments(l.gen)
		f := l.frame(t, damaged)
		flipByte(t, f.file, f.data+20)
	}
	before := snapshotDir(t, dir)
	if w, err := Open(dir); err == nil {
		got := replayAll(t, w)
		w.Close()
		t.Fatalf("Open of a damaged log closed cleanly succeeded with %d of 30 entries, repair %+v", len(got), w.Recovered().Repaired)
	} else if ce, ok := errors.AsType[*CorruptError](err); !ok || ce.Index != damaged || ce.File != filepath.Join(dir, genName(1), segmentName(1)) {
		t.Fatalf("Open: %v, want a *CorruptError naming entry %d of the segment", err, damaged)
	}
	if after := snapshotDir(t, dir); after != before {
		t.Fatalf("a refused Open changed the directory")
	}
	w = openT(t, crashed)
	defer closeT(t, w)
	if r := w.Recovered().Repaired; r == nil || r.Index != damaged || r.Dropped != 9 {
		t.Fatalf("after a crash: repair %+v, want the last batch cut from entry %d with 9 intact entries", r, damaged)
	}
	checkEntries(t, replayAll(t, w), want[:20])
}

// TestCleanCloseRecord: Close records the last entry in CLOSED; an Open of
// a log closed so, with nothing after it, is Clean, and closing it again
// without appends rewrites nothing. A log Open compacted has a new
// generation, which records its own clean close.
func TestCleanCloseRecord(t *testing.T) {
	dir := t.TempDir()
	gen := filepath.Join(dir, genName(1))
	w := openT(t, dir)
	if w.Recovered().Clean {
		t.Fatal("a new log is reported closed cleanly")
	}
	appendT(t, w, msg(0, 0, 0), msg(0, 1, 1))
	closeT(t, w)
	if m, err := readClosed(gen); err != nil || m != 3 {
		t.Fatalf("CLOSED records entry %d (%v), want 3", m, err)
	}
	stat := func() os.FileInfo {
		info, err := os.Stat(filepath.Join(gen, closedFile))
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	before := stat()
	w = openT(t, dir)
	if !w.Recovered().Clean {
		t.Fatalf("reopen of a log closed cleanly: %+v", w.Recovered())
	}
	closeT(t, w)
	if !os.SameFile(stat(), before) { // a rewrite renames a new file over it
		t.Fatal("a Close without appends rewrote CLOSED")
	}
	w = openT(t, dir)
	if err := w.GC(ctx, win(0).End, win(0)); err != nil {
		t.Fatal(err)
	}
	closeT(t, w)
	w = openT(t, dir) // compacts window 0 away into generation 2
	if rec := w.Recovered(); !rec.Compacted || !rec.Clean {
		t.Fatalf("recovered %+v, want a clean log compacted", rec)
	}
	closeT(t, w)
	if m, err := readClosed(filepath.Join(dir, genName(2))); err != nil || m != 2 {
		t.Fatalf("generation 2's CLOSED records entry %d (%v), want 2 (checkpoint, one message)", m, err)
	}
}
