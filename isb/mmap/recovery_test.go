package mmap

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// build makes a closed topic of n items in partition 0 (several 4 KiB
// segments for n=400) with group g committed at 100.
func build(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	b := open(t, dir, 1)
	appendItems(t, b.Partition(0), 0, n, 25)
	if err := b.Partition(0).Commit(bg, "g", 100); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func file(dir, name string) string { return filepath.Join(partDir(dir, 0), name) }

func patchCheckpoint(t *testing.T, path string, kind checkpointKind, f func(*checkpoint)) {
	t.Helper()
	v, err := readCheckpoint(path, kind)
	if err != nil {
		t.Fatal(err)
	}
	f(&v)
	if err := os.WriteFile(path, encodeCheckpoint(kind, v), 0o644); err != nil {
		t.Fatal(err)
	}
}

// positions returns the byte positions of every record of a segment file.
func positions(t testing.TB, path string, first int64) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ps []int
	for pos, off := segmentHeaderSize, first; ; off++ {
		_, next, _, reason := decodeRecord(data, pos, off)
		if reason != "" {
			return ps
		}
		ps = append(ps, pos)
		pos = next
	}
}

func patchFile(t *testing.T, path string, at int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

// Damage that recovery must refuse, with the file it must name (the damage
// table in damage_test.go covers the rest).
func TestRecoveryRefuses(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string) // returns after damaging dir
		file   string
		parts  int
	}{
		{"earliest checkpoint off a segment boundary", func(t *testing.T, dir string) {
			patchCheckpoint(t, file(dir, earliestFile), kindEarliest, func(v *checkpoint) { v[0] = 3 })
		}, earliestFile, 1},
		{"consumer checkpoint ahead of the log", func(t *testing.T, dir string) {
			patchCheckpoint(t, file(dir, filepath.Join(offsetsDir, "g", consumerFile)), kindConsumer, func(v *checkpoint) { v[0] = 401 })
		}, consumerFile, 1},
		{"consumer checkpoint corrupt", func(t *testing.T, dir string) {
			patchFile(t, file(dir, filepath.Join(offsetsDir, "g", consumerFile)), 12, []byte{1})
		}, consumerFile, 1},
		{"consumer checkpoint missing", func(t *testing.T, dir string) {
			os.Remove(file(dir, filepath.Join(offsetsDir, "g", consumerFile)))
		}, consumerFile, 1},
		{"missing segment inside the log", func(t *testing.T, dir string) {
			segs := segFiles(t, dir, 0)
			os.Remove(segs[2])
		}, "", 1},
		{"missing first segment", func(t *testing.T, dir string) {
			os.Remove(segFiles(t, dir, 0)[0])
		}, segmentFileName(0), 1},
		{"segment header corrupt", func(t *testing.T, dir string) {
			patchFile(t, segFiles(t, dir, 0)[1], 12, []byte{0x7f})
		}, "", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := build(t, 400)
			tc.damage(t, dir)
			_, err := openErr(dir, tc.parts)
			ce := wantCorrupt(t, err, tc.file)
			if ce.File == "" || ce.Reason == "" {
				t.Fatalf("error names no file or reason: %v", err)
			}
			t.Log(err)
		})
	}
}

// A missing middle segment is named by the offsets it should hold.
func TestRecoveryNamesMissingSegment(t *testing.T) {
	dir := build(t, 400)
	segs := segFiles(t, dir, 0)
	os.Remove(segs[2])
	_, err := openErr(dir, 1)
	wantCorrupt(t, err, filepath.Base(segs[2]))
}

// Crash states that recovery must repair, keeping every flushed record.
func TestRecoveryRepairs(t *testing.T) {
	t.Run("producer checkpoint behind the log", func(t *testing.T) {
		dir := t.TempDir()
		b := open(t, dir, 1, SegmentSize(1<<20))
		appendItems(t, b.Partition(0), 0, 300, 10)
		// The checkpoint lags (written every 4 MiB): a crash now
		// leaves it at the start.
		snap := snapshot(t, dir)
		v, _ := readCheckpoint(file(snap, producerFile), kindProducer)
		if v[0] != 0 {
			t.Fatalf("producer checkpoint at %d, the test needs it behind", v[0])
		}
		b2 := open(t, snap, 1)
		checkItems(t, readAll(t, b2.Partition(0)), 0, 300)
	})
	t.Run("checkpoint behind across a sealed segment", func(t *testing.T) {
		dir := build(t, 400)
		segs := segFiles(t, dir, 0)
		first, _ := parseSegmentFileName(filepath.Base(segs[len(segs)-3]))
		patchCheckpoint(t, file(dir, producerFile), kindProducer, func(v *checkpoint) {
			*v = checkpoint{first, first, segmentHeaderSize, -1}
		})
		b := open(t, dir, 1)
		checkItems(t, readAll(t, b.Partition(0)), 0, 400)
	})
	for _, tc := range []struct {
		name   string
		damage func(seg []byte, ps []int) // the last segment, its record positions
	}{
		{"torn tail: end marker missing", func(seg []byte, ps []int) {
			end := len(recordFor(seg, ps[len(ps)-1]))
			clear(seg[ps[len(ps)-1]+end-4 : ps[len(ps)-1]+end])
		}},
		{"partial tail: second half never written", func(seg []byte, ps []int) {
			p := ps[len(ps)-1]
			clear(seg[p+10 : p+len(recordFor(seg, p))])
		}},
		{"corrupt tail: crc mismatch", func(seg []byte, ps []int) { seg[ps[len(ps)-1]+17] ^= 4 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b := open(t, dir, 1)
			appendItems(t, b.Partition(0), 0, 10, 1)
			snap := snapshot(t, dir)
			path := segFiles(t, snap, 0)[0]
			data, _ := os.ReadFile(path)
			tc.damage(data, positions(t, path, 0))
			os.WriteFile(path, data, 0o644)
			// Records are flushed in order; the producer checkpoint
			// from the last Close would not cover the tear.
			patchCheckpoint(t, file(snap, producerFile), kindProducer, func(v *checkpoint) { *v = checkpoint{0, 0, segmentHeaderSize, -1} })

			b2 := open(t, snap, 1)
			l := b2.Partition(0)
			checkItems(t, readAll(t, l), 0, 9)
			appendItems(t, l, 9, 12, 1)
			checkItems(t, readAll(t, l), 0, 12)
			b2.Close()
			b3 := open(t, snap, 1)
			checkItems(t, readAll(t, b3.Partition(0)), 0, 12)
		})
	}
}

func recordFor(seg []byte, pos int) []byte {
	n := int(binary.LittleEndian.Uint32(seg[pos:]))
	return seg[pos : pos+recordSize(n)]
}

// A damaged record with intact records after it is not a torn tail, even
// past the producer checkpoint (a crash): the intact records stay, the
// damaged one reads as a *CorruptError, and new records go after the last.
func TestRecoveryKeepsRecordsAfterDamage(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, 1)
	l := b.Partition(0)
	same := func(i int) string { return "fixed-" + string(rune('a'+i)) }
	for i := range 5 {
		if _, err := waitWrite(l.Append([]string{same(i)})); err != nil {
			t.Fatal(err)
		}
	}
	snap := snapshot(t, dir)
	path := segFiles(t, snap, 0)[0]
	ps := positions(t, path, 0)
	data, _ := os.ReadFile(path)
	data[ps[3]+20] ^= 0xff // record 3 damaged, record 4 intact after it
	os.WriteFile(path, data, 0o644)
	patchCheckpoint(t, file(snap, producerFile), kindProducer, func(v *checkpoint) { *v = checkpoint{0, 0, segmentHeaderSize, -1} })

	b2 := open(t, snap, 1)
	l2 := b2.Partition(0)
	if tail := l2.Tail(); tail != 5 {
		t.Fatalf("tail %d, want 5: intact record 4 was cut", tail)
	}
	if _, _, err := l2.Read(bg, 3, 1, nil); err == nil {
		t.Fatal("damaged record 3 read without an error")
	} else if ce := wantCorrupt(t, err, filepath.Base(path)); ce.Offset != int64(ps[3]) {
		t.Fatalf("damage reported at byte %d, want %d", ce.Offset, ps[3])
	}
	if _, err := waitWrite(l2.Append([]string{same(9)})); err != nil {
		t.Fatal(err)
	}
	// Crash again without a producer checkpoint past 0.
	snap2 := snapshot(t, snap)
	patchCheckpoint(t, file(snap2, producerFile), kindProducer, func(v *checkpoint) { *v = checkpoint{0, 0, segmentHeaderSize, -1} })
	b3 := open(t, snap2, 1)
	l3 := b3.Partition(0)
	for off, want := range map[int64]string{0: same(0), 1: same(1), 2: same(2), 4: same(4), 5: same(9)} {
		_, got, err := l3.Read(bg, off, 1, nil)
		if err != nil || got[0] != want {
			t.Fatalf("offset %d: %q, %v; want %q", off, got, err, want)
		}
	}
	if _, _, err := l3.Read(bg, 3, 1, nil); err == nil {
		t.Fatal("damaged record 3 read without an error after the second crash")
	}
}

// Open does not read the retained log, so damage inside it surfaces from
// Read, as a *CorruptError naming the segment, after the intact records
// before it.
func TestCorruptRecordSurfacesFromRead(t *testing.T) {
	for _, where := range []string{"sealed segment", "active segment"} {
		t.Run(where, func(t *testing.T) {
			dir := build(t, 400)
			segs := segFiles(t, dir, 0)
			path := segs[0]
			if where == "active segment" {
				path = segs[len(segs)-1]
			}
			first, _ := parseSegmentFileName(filepath.Base(path))
			ps := positions(t, path, first)
			patchFile(t, path, int64(ps[2]+recordHeaderSize+1), []byte{'#'})
			b := open(t, dir, 1)
			l := b.Partition(0)
			if l.Tail() != 400 {
				t.Fatalf("tail %d, want 400", l.Tail())
			}
			_, got, err := l.Read(bg, first, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkItems(t, got, int(first), 2)
			_, _, err = l.Read(bg, first+2, 10, nil)
			ce := wantCorrupt(t, err, filepath.Base(path))
			if ce.Offset != int64(ps[2]) {
				t.Fatalf("corrupt at byte %d, want %d", ce.Offset, ps[2])
			}
			// Reading on resynchronises after the damaged record: the
			// records after it are intact and readable.
			_, got, err = l.Read(bg, first+3, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkItems(t, got[:1], int(first)+3, 1)
		})
	}
}

func TestRecoveryCleansLeftovers(t *testing.T) {
	dir := build(t, 400)
	segs := segFiles(t, dir, 0)
	// A retention that moved earliest.offset and crashed before deleting.
	second, _ := parseSegmentFileName(filepath.Base(segs[1]))
	patchCheckpoint(t, file(dir, earliestFile), kindEarliest, func(v *checkpoint) { v[0] = second })
	patchCheckpoint(t, file(dir, filepath.Join(offsetsDir, "g", consumerFile)), kindConsumer, func(v *checkpoint) { v[0] = second })
	os.WriteFile(file(dir, producerFile+tmpSuffix), []byte("half"), 0o644)
	os.WriteFile(file(dir, segmentFileName(1<<30)+tmpSuffix), []byte("half"), 0o644)
	os.Mkdir(file(dir, filepath.Join(offsetsDir, groupTmpPrefix+"nocommit")), 0o755)
	os.WriteFile(file(dir, "notes.tmp"), []byte("not ours"), 0o644)
	os.MkdirAll(filepath.Join(dir, testTopic, partitionDirName(1)+tmpSuffix), 0o755)

	b := open(t, dir, 1)
	l := b.Partition(0)
	if l.Head() != second {
		t.Fatalf("head %d, want %d", l.Head(), second)
	}
	checkItems(t, readAll(t, l), int(second), 400-int(second))
	for _, p := range []string{segs[0], file(dir, producerFile+tmpSuffix), file(dir, segmentFileName(1<<30)+tmpSuffix),
		file(dir, filepath.Join(offsetsDir, groupTmpPrefix+"nocommit")), filepath.Join(dir, testTopic, partitionDirName(1)+tmpSuffix)} {
		if exists(p) {
			t.Errorf("%s survived recovery", p)
		}
	}
	// Only this package's temporary names are removed.
	if !exists(file(dir, "notes.tmp")) {
		t.Error("recovery deleted notes.tmp, a file it did not write")
	}
	if g := groupsOf(t, b); len(g) != 1 || g[0] != "g" {
		t.Fatalf("groups %q", g)
	}
}

// A crash between sealing a segment and publishing the next one.
func TestRecoverySealedLastSegment(t *testing.T) {
	dir := build(t, 400)
	segs := segFiles(t, dir, 0)
	last := segs[len(segs)-1]
	os.Remove(last)
	prev := segs[len(segs)-2]
	first, _ := parseSegmentFileName(filepath.Base(prev))
	patchCheckpoint(t, file(dir, producerFile), kindProducer, func(v *checkpoint) { *v = checkpoint{first, first, segmentHeaderSize, -1} })
	lastFirst, _ := parseSegmentFileName(filepath.Base(last))

	b := open(t, dir, 1)
	l := b.Partition(0)
	if l.Tail() != lastFirst {
		t.Fatalf("tail %d, want %d", l.Tail(), lastFirst)
	}
	appendItems(t, l, int(lastFirst), 400, 5)
	checkItems(t, readAll(t, l), 0, 400)
	if !exists(last) {
		t.Fatal("the next segment was not recreated")
	}
}

// Past the producer checkpoint, recovery looks for intact records after a
// damaged one only in the data of the segment, not in the hole after the
// log: on a file that still has its hole (damaged in place), the records
// after the damage are found and the search stops where the data ends.
func TestRecoveryResyncStopsAtHole(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, 1, SegmentSize(1<<20))
	appendItems(t, b.Partition(0), 0, 50, 10)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	path := segFiles(t, dir, 0)[0]
	ps := positions(t, path, 0)
	patchFile(t, path, int64(ps[20]+recordHeaderSize), []byte{'#'})
	patchCheckpoint(t, file(dir, producerFile), kindProducer, func(v *checkpoint) { *v = checkpoint{0, 0, segmentHeaderSize, -1} })
	s, err := openSegment(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ensureMapped(); err != nil {
		t.Fatal(err)
	}
	end := s.dataEnd(ps[20])
	s.unmap()
	if end >= 1<<20 {
		t.Skipf("the file system reports no hole in %s (data ends at %d)", path, end)
	}
	if end < ps[49] {
		t.Fatalf("data ends at %d, before the last record at %d", end, ps[49])
	}
	b2 := open(t, dir, 1)
	l := b2.Partition(0)
	if l.Tail() != 50 {
		t.Fatalf("tail %d, want 50", l.Tail())
	}
	for off := int64(0); off < 50; off++ {
		_, got, err := l.Read(bg, off, 1, nil)
		if off == 20 {
			wantCorrupt(t, err, filepath.Base(path))
			continue
		}
		if err != nil || got[0] != item(int(off)) {
			t.Fatalf("offset %d: %v, %v", off, got, err)
		}
	}
}
