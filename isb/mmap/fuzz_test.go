package mmap

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzRecovery damages a topic directory as the input says and opens it.
// Recovery must not panic; an open may fail only with a *CorruptError. An
// open that succeeds must read every offset of [Head, Tail) as the
// original item or as a *CorruptError (never a wrong item), and every
// record whose bytes no operation touched must be inside [Head, Tail) and
// read back intact: damage costs the damaged records, never the rest.
//
// The input is a list of 8-byte operations: kind, file index, a 32-bit
// position and a 16-bit argument. Files are the partition's regular files
// in name order (segments first, then checkpoints), then the group's
// consumer.offset.
func FuzzRecovery(f *testing.F) {
	const n = 300
	template := f.TempDir()
	b := open(f, template, 1)
	appendItems(f, b.Partition(0), 0, n, 20)
	if err := b.Partition(0).Commit(bg, "g", 150); err != nil {
		f.Fatal(err)
	}
	if err := b.Close(); err != nil {
		f.Fatal(err)
	}
	records := recordMap(f, template)
	op := func(kind, file byte, pos uint32, arg uint16) []byte {
		b := []byte{kind, file, 0, 0, 0, 0, 0, 0}
		binary.LittleEndian.PutUint32(b[2:], pos)
		binary.LittleEndian.PutUint16(b[6:], arg)
		return b
	}
	segs := len(segFiles(f, template, 0))
	last := byte(segs - 1)
	producer := byte(segs + 1) // earliest.offset sorts before producer.offset
	f.Add([]byte{})
	f.Add(op(opFlip, 0, 200, 0x40))                                            // a record of the first segment
	f.Add(op(opFlip, last, 100, 1))                                            // a record of the active segment
	f.Add(slices.Concat(op(opRewind, last, 0, 0), op(opFlip, last, 100, 1)))   // the same after a crash: mid-log, intact records after it
	f.Add(slices.Concat(op(opRewind, last, 0, 0), op(opZero, last, 40, 9)))    // crash state: scan, then a tear
	f.Add(slices.Concat(op(opRewind, last, 0, 0), op(opZero, last, 1000, 99))) // a tear at the tail
	f.Add(op(opZero, 1, 3072, 1024))                                           // the last KiB of a sealed segment
	f.Add(op(opFlip, 1, 12, 0x10))                                             // a segment header
	f.Add(op(opTruncate, last, 500, 0))                                        // the active segment, mid-record
	f.Add(op(opTruncate, 1, 100, 0))
	f.Add(op(opRemove, 1, 0, 0))          // a middle segment
	f.Add(op(opRemove, producer, 0, 0))   // producer.offset
	f.Add(op(opRemove, producer-1, 0, 0)) // earliest.offset
	f.Add(op(opFlip, producer, 9, 3))     // producer.offset
	f.Add(op(opZero, producer+1, 0, 48))  // consumer.offset
	f.Add(op(opRemove, producer+1, 0, 0)) // consumer.offset
	f.Fuzz(func(t *testing.T, ops []byte) {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(template)); err != nil {
			t.Fatal(err)
		}
		files := damageableFiles(t, dir)
		touched := map[string][][2]int64{}
		for ; len(ops) >= 8; ops = ops[8:] {
			damage(t, files, ops[:8], touched)
		}
		// Verify, before Open, must say what Open then does.
		info, verr := Verify(filepath.Join(dir, testTopic))
		if verr != nil {
			t.Fatalf("verify: %v", verr)
		}
		b, err := openErr(dir, 1)
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				// Only damage may fail an open, and damage is reported as such.
				t.Fatalf("open failed without a *CorruptError: %v", err)
			}
			if len(info.Damage) == 0 {
				t.Fatalf("open refused (%v), verify found no damage", err)
			}
			return
		}
		defer b.Close()
		l := b.Partition(0)
		if l.Tail() > n {
			t.Fatalf("recovered tail %d beyond the %d items written", l.Tail(), n)
		}
		p := info.Partitions[0]
		var damaged int64
		for _, s := range p.Segments {
			damaged += s.Damaged
		}
		if p.Head != l.Head() || p.Tail != l.Tail() {
			t.Fatalf("verify found [%d, %d), open [%d, %d)", p.Head, p.Tail, l.Head(), l.Tail())
		}
		for off := l.Head(); off < l.Tail(); off++ {
			_, got, err := l.Read(bg, off, 1, nil)
			if err != nil {
				wantCorrupt(t, err, "")
				damaged--
				continue
			}
			if want := item(int(off)); got[0] != want {
				t.Fatalf("offset %d holds %q, want %q", off, got[0], want)
			}
		}
		if damaged != 0 {
			t.Fatalf("verify counted %d damaged offsets more than read as damaged (%v)", damaged, info.Damage)
		}
		for _, r := range records {
			name := filepath.Join(partDir(dir, 0), r.file)
			if overlaps(touched[name], r.from, r.to) {
				continue
			}
			if r.offset < l.Head() || r.offset >= l.Tail() {
				t.Fatalf("intact record of offset %d (%s bytes %d-%d) is outside the recovered log [%d, %d)", r.offset, r.file, r.from, r.to, l.Head(), l.Tail())
			}
			_, got, err := l.Read(bg, r.offset, 1, nil)
			if err != nil {
				t.Fatalf("intact record of offset %d (%s bytes %d-%d): %v", r.offset, r.file, r.from, r.to, err)
			}
			if got[0] != item(int(r.offset)) {
				t.Fatalf("offset %d holds %q", r.offset, got[0])
			}
		}
	})
}

// placedRecord is where a record lies in the template directory.
type placedRecord struct {
	file     string // segment file name
	from, to int64  // bytes
	offset   int64
}

// recordMap lists every record of partition 0 of dir.
func recordMap(t testing.TB, dir string) []placedRecord { return partitionRecords(t, dir, 0) }

// partitionRecords lists every record of partition p of dir.
func partitionRecords(t testing.TB, dir string, p int) []placedRecord {
	var out []placedRecord
	for _, path := range segFiles(t, dir, p) {
		first, _ := parseSegmentFileName(filepath.Base(path))
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, pos := range positions(t, path, first) {
			n := int(binary.LittleEndian.Uint32(data[pos:]))
			out = append(out, placedRecord{filepath.Base(path), int64(pos), int64(pos + recordSize(n)), first + int64(i)})
		}
	}
	return out
}

func overlaps(ranges [][2]int64, from, to int64) bool {
	for _, r := range ranges {
		if r[0] < to && from < r[1] {
			return true
		}
	}
	return false
}

const (
	opFlip     = iota // xor the byte at pos with arg
	opZero            // zero arg bytes from pos
	opTruncate        // truncate to pos
	opRemove          // delete the file
	opRewind          // producer checkpoint back to the start of segment file
	opKinds
)

func damageableFiles(t testing.TB, dir string) []string {
	entries, err := os.ReadDir(partDir(dir, 0))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			files = append(files, filepath.Join(partDir(dir, 0), e.Name()))
		}
	}
	return append(files, filepath.Join(partDir(dir, 0), offsetsDir, "g", consumerFile))
}

// damage applies op and records the byte ranges it touched in touched
// (a removed or rewound file: all of it).
func damage(t testing.TB, files []string, op []byte, touched map[string][][2]int64) {
	path := files[int(op[1])%len(files)]
	pos := int64(binary.LittleEndian.Uint32(op[2:]))
	arg := binary.LittleEndian.Uint16(op[6:])
	data, err := os.ReadFile(path)
	if err != nil {
		return // removed by an earlier operation
	}
	if len(data) == 0 {
		pos = 0
	} else {
		pos %= int64(len(data))
	}
	all := [2]int64{0, math.MaxInt64}
	switch op[0] % opKinds {
	case opFlip:
		if len(data) > 0 {
			data[pos] ^= byte(arg) | 1
			touched[path] = append(touched[path], [2]int64{pos, pos + 1})
		}
	case opZero:
		clear(data[pos:min(int(pos)+int(arg), len(data))])
		touched[path] = append(touched[path], [2]int64{pos, pos + int64(arg)})
	case opTruncate:
		data = data[:pos]
		touched[path] = append(touched[path], [2]int64{pos, math.MaxInt64})
	case opRemove:
		os.Remove(path)
		touched[path] = append(touched[path], all)
		return
	case opRewind:
		first, ok := parseSegmentFileName(filepath.Base(path))
		if !ok {
			return
		}
		data = encodeCheckpoint(kindProducer, checkpoint{first, first, segmentHeaderSize, -1})
		path = filepath.Join(filepath.Dir(path), producerFile)
		touched[path] = append(touched[path], all)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
