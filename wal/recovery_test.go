package wal

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tidwall "github.com/tidwall/wal"
)

// The damage table: a log of 40 batches of 5 messages in 4 KiB segments is
// damaged as each case says and opened. Repaired cases say how many of the
// 200 messages survive (always a prefix, in order, checked entry by entry),
// refused ones which error, file and entry index.

const (
	tableBatches = 40
	tableBatch   = 5
	tableSeg     = 4096
)

// tableLog is the undamaged log the cases start from.
type tableLog struct {
	dir  string
	gen  string        // the generation directory
	segs []segmentFile // its segments
	want []Entry
}

func buildTableLog(t *testing.T) *tableLog {
	dir := t.TempDir()
	w := openT(t, dir, SegmentSize(tableSeg))
	var want []Entry
	for b := range tableBatches {
		var batch []Entry
		for i := range tableBatch {
			seq := int64(b*tableBatch + i)
			e := msg(int32(seq%2), seq, b/10)
			// Padded so that each entry keeps its size from before
			// message ids (version 1), and the cases their layout.
			e.Value = append(e.Value, strings.Repeat("-", 60-1-len(e.ID))...)
			batch = append(batch, e)
		}
		appendT(t, w, batch...)
		want = append(want, batch...)
	}
	closeT(t, w)
	gen := filepath.Join(dir, genName(1))
	segs, _, err := listSegments(gen)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 5 {
		t.Fatalf("want at least 5 segments, got %d", len(segs))
	}
	return &tableLog{dir: dir, gen: gen, segs: segs, want: want}
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
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[pos] ^= 0x20
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
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
	binary.LittleEndian.PutUint32(e, crc32.Checksum(e[4:], castagnoli))
	if err := os.WriteFile(f.file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDamageTable(t *testing.T) {
	last := uint64(tableBatches*tableBatch + 1) // index of the last message
	cases := []struct {
		name   string
		damage func(t *testing.T, l *tableLog) // may return expectations through the closure
		// Repaired (or clean) opens: messages that survive, and the cut.
		survive int
		cut     bool
		dropped int
		// Refused opens: the error, and the file and index it names.
		refuse  error
		file    func(l *tableLog) string
		index   uint64
		extraOK func(t *testing.T, l *tableLog)
	}{
		{name: "clean", damage: func(*testing.T, *tableLog) {}, survive: 200},
		{name: "torn tail: last entry cut short", survive: 199, cut: true, damage: func(t *testing.T, l *tableLog) {
			f := l.frame(t, last)
			truncateTo(t, f.file, f.end-5)
		}},
		{name: "torn tail: last frame's length cut", survive: 199, cut: true, damage: func(t *testing.T, l *tableLog) {
			f := l.frame(t, last)
			truncateTo(t, f.file, f.pos+1)
		}},
		{name: "torn tail: zeros after the log (size persisted, data not)", survive: 200, cut: true, damage: func(t *testing.T, l *tableLog) {
			p := l.segs[len(l.segs)-1].path
			truncateTo(t, p, fileSize(t, p)+300)
		}},
		{name: "torn last batch: middle entry damaged, its later entries intact (power loss)", survive: 197, cut: true, dropped: 2, damage: func(t *testing.T, l *tableLog) {
			f := l.frame(t, last-2)
			flipByte(t, f.file, f.data+20)
		}},
		{name: "torn last batch: first entry damaged, rest intact", survive: 195, cut: true, dropped: 4, damage: func(t *testing.T, l *tableLog) {
			f := l.frame(t, last-4)
			flipByte(t, f.file, f.end-1)
		}},
		{name: "flipped byte mid-log in the last segment, later batches intact", refuse: ErrCorrupt, damage: func(t *testing.T, l *tableLog) {
			f := l.frame(t, l.segs[len(l.segs)-1].first)
			if f.file != l.segs[len(l.segs)-1].path || l.segOf(last-tableBatch) != len(l.segs)-1 {
				t.Fatal("the last segment must hold more than the last batch")
			}
			flipByte(t, f.file, f.data+16)
		}, file: func(l *tableLog) string { return l.segs[len(l.segs)-1].path }, index: 0 /* set below */},
		{name: "flipped byte in an earlier segment", refuse: ErrCorrupt, index: 40, damage: func(t *testing.T, l *tableLog) {
			f := l.frame(t, 40)
			flipByte(t, f.file, f.data+30)
		}, file: func(l *tableLog) string { return l.segs[l.segOf(40)].path }},
		{name: "flipped frame length in an earlier segment", refuse: ErrCorrupt, index: 40, damage: func(t *testing.T, l *tableLog) {
			f := l.frame(t, 40)
			flipByte(t, f.file, f.pos)
		}, file: func(l *tableLog) string { return l.segs[l.segOf(40)].path }},
		{name: "damaged checkpoint (entry 1)", refuse: ErrCorrupt, index: 1, damage: func(t *testing.T, l *tableLog) {
			flipByte(t, l.segs[0].path, 3)
		}, file: func(l *tableLog) string { return l.segs[0].path }},
		{name: "earlier segment truncated mid-entry", refuse: ErrCorrupt, damage: func(t *testing.T, l *tableLog) {
			truncateTo(t, l.segs[1].path, fileSize(t, l.segs[1].path)-7)
		}, file: func(l *tableLog) string { return l.segs[1].path }, index: 0 /* the segment's last entry: set below */},
		{name: "earlier segment truncated at an entry boundary", refuse: ErrCorrupt, damage: func(t *testing.T, l *tableLog) {
			f := l.frame(t, l.segs[2].first-1)
			truncateTo(t, f.file, f.pos)
		}, file: func(l *tableLog) string { return l.segs[2].path }, index: 0 /* set below */},
		{name: "middle segment deleted", refuse: ErrCorrupt, damage: func(t *testing.T, l *tableLog) {
			os.Remove(l.segs[2].path)
		}, file: func(l *tableLog) string { return l.segs[3].path }, index: 0 /* set below */},
		{name: "newest segment deleted", refuse: ErrCorrupt, damage: func(t *testing.T, l *tableLog) {
			os.Remove(l.segs[len(l.segs)-1].path)
		}, file: func(l *tableLog) string { return l.gen }},
		{name: "first segment deleted", refuse: ErrCorrupt, damage: func(t *testing.T, l *tableLog) {
			os.Remove(l.segs[0].path)
		}, file: func(l *tableLog) string { return l.gen }},
		{name: "stray tidwall/wal .START file", refuse: ErrCorrupt, damage: func(t *testing.T, l *tableLog) {
			os.WriteFile(l.segs[1].path+".START", []byte("x"), 0o644)
		}, file: func(l *tableLog) string { return l.segs[1].path + ".START" }},
		{name: "empty next generation directory beside the live one", refuse: ErrCorrupt, damage: func(t *testing.T, l *tableLog) {
			os.Mkdir(filepath.Join(l.dir, genName(2)), 0o755)
		}, file: func(l *tableLog) string { return filepath.Join(l.dir, genName(2)) }},
		{name: "stray files and leftovers of a compaction", survive: 200, damage: func(t *testing.T, l *tableLog) {
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
		{name: "empty newest segment (crash right after a rollover)", survive: 200, damage: func(t *testing.T, l *tableLog) {
			os.WriteFile(filepath.Join(l.gen, segmentName(last+1)), nil, 0o644)
		}},
		{name: "format version 1 (before message ids) mid-log", refuse: ErrVersion, index: 100, damage: func(t *testing.T, l *tableLog) {
			setVersion(t, l.frame(t, 100), 1)
		}, file: func(l *tableLog) string { return l.segs[l.segOf(100)].path }},
		{name: "wrong version at the tail (intact: not cut)", refuse: ErrVersion, index: last, damage: func(t *testing.T, l *tableLog) {
			setVersion(t, l.frame(t, last), 9)
		}, file: func(l *tableLog) string { return l.segs[len(l.segs)-1].path }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := buildTableLog(t)
			index := c.index
			switch {
			case strings.HasPrefix(c.name, "flipped byte mid-log in the last"):
				index = l.segs[len(l.segs)-1].first
			case c.name == "earlier segment truncated mid-entry":
				index = l.segs[2].first - 1
			case c.name == "earlier segment truncated at an entry boundary":
				index = l.segs[2].first - 1
			case c.name == "middle segment deleted":
				index = l.segs[2].first
			}
			c.damage(t, l)
			before := snapshotDir(t, l.dir)
			w, err := Open(l.dir, SegmentSize(tableSeg))
			if c.refuse != nil {
				if err == nil {
					w.Close()
					t.Fatalf("Open succeeded, want %v", c.refuse)
				}
				if !errors.Is(err, c.refuse) {
					t.Fatalf("Open: %v, want %v", err, c.refuse)
				}
				file, idx := "", uint64(0)
				if ce, ok := errors.AsType[*CorruptError](err); ok {
					file, idx = ce.File, ce.Index
				} else if ve, ok := errors.AsType[*VersionError](err); ok {
					file, idx = ve.File, ve.Index
				}
				if want := c.file(l); file != want {
					t.Errorf("error names %s, want %s (%v)", file, want, err)
				}
				if index != 0 && idx != index {
					t.Errorf("error names entry %d, want %d (%v)", idx, index, err)
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
			if c.cut != (rec.Repaired != nil) {
				t.Fatalf("repaired %+v, want a cut: %v", rec.Repaired, c.cut)
			}
			if rec.Repaired != nil {
				if rec.Repaired.Index != uint64(c.survive)+2 || rec.Repaired.Dropped != c.dropped {
					t.Errorf("repair %+v: want cut at entry %d with %d intact entries dropped", rec.Repaired, c.survive+2, c.dropped)
				}
				t.Logf("repaired: %+v", *rec.Repaired)
			}
			checkEntries(t, replayAll(t, w), l.want[:c.survive])
			// The repaired log takes appends and opens again whole.
			more := msg(0, 1000, 9)
			appendT(t, w, more)
			closeT(t, w)
			w = openT(t, l.dir, SegmentSize(tableSeg))
			checkEntries(t, replayAll(t, w), append(l.want[:c.survive:c.survive], more))
			closeT(t, w)
			if c.extraOK != nil {
				c.extraOK(t, l)
			}
		})
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
