package mmap

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/runnel-dev/runnel/isb"
)

// FuzzRecovery damages a topic directory as the input says and opens it:
// recovery must not panic, and whatever it opens must hold the original
// items at their offsets, up to the tail or to a read error that is a
// *CorruptError.
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
	if err := b.Partition(0).Commit("g", 150); err != nil {
		f.Fatal(err)
	}
	if err := b.Close(); err != nil {
		f.Fatal(err)
	}
	op := func(kind, file byte, pos uint32, arg uint16) []byte {
		b := []byte{kind, file, 0, 0, 0, 0, 0, 0}
		binary.LittleEndian.PutUint32(b[2:], pos)
		binary.LittleEndian.PutUint16(b[6:], arg)
		return b
	}
	f.Add([]byte{})
	f.Add(op(opFlip, 0, 200, 0x40))                                   // a record of the first segment
	f.Add(op(opFlip, 2, 100, 1))                                      // a record of the active segment
	f.Add(slices.Concat(op(opRewind, 1, 0, 0), op(opZero, 2, 40, 9))) // crash state: scan, then a tear
	f.Add(op(opTruncate, 2, 5000, 0))
	f.Add(op(opTruncate, 1, 100, 0))
	f.Add(op(opRemove, 1, 0, 0))
	f.Add(op(opFlip, 5, 9, 3))  // producer.offset
	f.Add(op(opZero, 6, 0, 48)) // consumer.offset
	f.Fuzz(func(t *testing.T, ops []byte) {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(template)); err != nil {
			t.Fatal(err)
		}
		files := damageableFiles(t, dir)
		for ; len(ops) >= 8; ops = ops[8:] {
			damage(t, files, ops[:8])
		}
		b, err := openErr(dir, 1)
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) && !errors.Is(err, isb.ErrCorrupt) {
				// Only damage may fail an open, and damage is reported as such.
				t.Fatalf("open failed without a *CorruptError: %v", err)
			}
			return
		}
		defer b.Close()
		l := b.Partition(0)
		if l.Tail() > n {
			t.Fatalf("recovered tail %d beyond the %d items written", l.Tail(), n)
		}
		got, err := readUntilError(l)
		if err != nil {
			wantCorrupt(t, err, "")
		}
		for i, g := range got {
			if want := item(int(l.Head()) + i); g != want {
				t.Fatalf("offset %d holds %q, want %q", int(l.Head())+i, g, want)
			}
		}
	})
}

const (
	opFlip     = iota // xor the byte at pos with arg
	opZero            // zero arg bytes from pos
	opTruncate        // truncate to pos
	opRemove          // delete the file
	opRewind          // producer checkpoint back to the start of segment file
	opKinds
)

func damageableFiles(t *testing.T, dir string) []string {
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

func damage(t *testing.T, files []string, op []byte) {
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
	switch op[0] % opKinds {
	case opFlip:
		if len(data) > 0 {
			data[pos] ^= byte(arg) | 1
		}
	case opZero:
		clear(data[pos:min(int(pos)+int(arg), len(data))])
	case opTruncate:
		data = data[:pos]
	case opRemove:
		os.Remove(path)
		return
	case opRewind:
		first, ok := parseSegmentFileName(filepath.Base(path))
		if !ok {
			return
		}
		data = encodeCheckpoint(kindProducer, checkpoint{first, first, segmentHeaderSize, -1})
		path = filepath.Join(filepath.Dir(path), producerFile)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
