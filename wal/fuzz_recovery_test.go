package wal

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// FuzzRecovery damages a log as the input says and opens it. Open must not
// panic; it either refuses with a *CorruptError or *VersionError, or opens
// a log whose replay is a prefix of what was appended, in order and intact,
// holding at least every entry before the first damaged byte (a torn tail
// is cut there, nothing before it).
//
// The log was closed cleanly: while its CLOSED record is unchanged, every
// entry up to the one it names was acknowledged, so an Open that succeeds
// must replay all of them (it may only cut bytes after the last one). An
// operation removing or damaging CLOSED makes the files a crash image.
//
// The input is a list of 6-byte operations: kind, file, a 16-bit position
// and a 16-bit argument. Files are the generation's segments in order,
// then TAIL, then CLOSED.
func FuzzRecovery(f *testing.F) {
	op := func(kind, file byte, pos, arg uint16) []byte {
		b := []byte{kind, file, 0, 0, 0, 0}
		binary.LittleEndian.PutUint16(b[2:], pos)
		binary.LittleEndian.PutUint16(b[4:], arg)
		return b
	}
	f.Add([]byte{})
	f.Add(op(opFlip, 0, 100, 0x40))
	f.Add(op(opFlip, 3, 10, 1))
	f.Add(op(opTruncate, 3, 700, 0))
	f.Add(op(opTruncate, 1, 0, 0))
	f.Add(op(opExtend, 3, 0, 300))
	f.Add(op(opRemove, 2, 0, 0))
	f.Add(op(opRemove, 4, 0, 0))
	f.Add(slices.Concat(op(opTruncate, 3, 900, 0), op(opExtend, 3, 0, 50)))
	// The last segment cut short, the last entry damaged,
	// zeros after the log: refused or all kept after a clean close...
	last := byte(recoverySegments - 1)
	f.Add(op(opTruncate, last, 1024, 0))
	f.Add(op(opFlip, last, 0xffff, 4))
	f.Add(op(opExtend, last, 0, 100))
	// ... and as after a crash once CLOSED is gone or damaged.
	f.Add(slices.Concat(op(opRemove, last+2, 0, 0), op(opFlip, last, 0xffff, 4)))
	f.Add(slices.Concat(op(opFlip, last+2, 3, 1), op(opTruncate, last, 1024, 0)))
	f.Fuzz(func(t *testing.T, ops []byte) {
		template, want := recoveryTemplate(t)
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(template)); err != nil {
			t.Fatal(err)
		}
		gen := filepath.Join(dir, genName(1))
		files := recoveryFiles(t, gen)
		orig := map[string][]byte{}
		for _, p := range files {
			orig[p], _ = os.ReadFile(p)
		}
		for ; len(ops) >= 6; ops = ops[6:] {
			recoveryDamage(files, ops[:6])
		}
		intact := intactPrefix(t, gen, files[:len(files)-2], orig)
		closed := files[len(files)-1]
		if now, err := os.ReadFile(closed); err == nil && string(now) == string(orig[closed]) {
			intact = len(want) // acknowledged, recorded by a clean close
		}
		// Inspect, before Open, must say what Open then does.
		in, ierr := Inspect(dir)
		if ierr != nil {
			t.Fatalf("Inspect: %v", ierr)
		}
		w, err := Open(dir, SegmentSize(tableSeg), CompactEvery(0))
		if err != nil {
			var ce *CorruptError
			var ve *VersionError
			if !errors.As(err, &ce) && !errors.As(err, &ve) {
				t.Fatalf("Open: %v, neither a *CorruptError nor a *VersionError", err)
			}
			if len(in.Damage) == 0 {
				t.Fatalf("Open refused (%v), Inspect found no damage", err)
			}
			return
		}
		defer w.Close()
		var got []Entry
		for e, err := range w.Replay() {
			if err != nil {
				t.Fatalf("Replay: %v", err)
			}
			e.Value = slices.Clone(e.Value)
			got = append(got, e)
		}
		if len(in.Damage) != 0 || in.OpenMessages != len(got) || (in.Repair != nil) != (w.Recovered().Repaired != nil) {
			t.Fatalf("Inspect: damage %v, %d open messages, repair %+v; Open replays %d, repaired %+v", in.Damage, in.OpenMessages, in.Repair, len(got), w.Recovered().Repaired)
		}
		if len(got) < intact || len(got) > len(want) {
			t.Fatalf("replayed %d entries; %d were before the first damaged byte, %d appended", len(got), intact, len(want))
		}
		checkEntries(t, got, want[:len(got)])
	})
}

const (
	opFlip = iota
	opTruncate
	opExtend
	opRemove
	opKinds
)

var (
	templateOnce sync.Once
	templateDir  string
	templateWant []Entry
)

// recoveryTemplate builds, once, a closed log of 120 messages in 4 KiB
// segments, batches of 1 to 7.
func recoveryTemplate(t *testing.T) (string, []Entry) {
	templateOnce.Do(func() {
		dir, err := os.MkdirTemp("", "wal-fuzz-template-")
		if err != nil {
			t.Fatal(err)
		}
		w := openT(t, dir, SegmentSize(tableSeg), CompactEvery(0))
		for seq := int64(0); seq < 120; {
			var batch []Entry
			for range 1 + seq%7 {
				e := msg(int32(seq%2), seq, 0)
				e.Value = append(e.Value, strings.Repeat("p", 40)...)
				batch = append(batch, e)
				seq++
			}
			appendT(t, w, batch...)
			templateWant = append(templateWant, batch...)
		}
		closeT(t, w)
		templateDir = dir
	})
	return templateDir, templateWant
}

func recoveryFiles(t *testing.T, gen string) []string {
	segs, _, err := listSegments(gen)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, s := range segs {
		files = append(files, s.path)
	}
	if len(files) != recoverySegments {
		t.Fatalf("the template has %d segments, the seeds are written for %d", len(files), recoverySegments)
	}
	return append(files, filepath.Join(gen, hintFile), filepath.Join(gen, closedFile))
}

// recoverySegments is how many segments the template has.
const recoverySegments = 4

func recoveryDamage(files []string, op []byte) {
	path := files[int(op[1])%len(files)]
	pos, arg := int(binary.LittleEndian.Uint16(op[2:])), binary.LittleEndian.Uint16(op[4:])
	b, err := os.ReadFile(path)
	if err != nil {
		return // removed by an earlier operation
	}
	switch op[0] % opKinds {
	case opFlip:
		if len(b) > 0 {
			b[pos%len(b)] ^= byte(arg) | 1
		}
	case opTruncate:
		b = b[:pos%(len(b)+1)]
	case opExtend:
		b = append(b, make([]byte, arg%1024)...)
	case opRemove:
		os.Remove(path)
		return
	}
	os.WriteFile(path, b, 0o644)
}

// intactPrefix counts the messages whose frames are all unchanged, from the
// start of the log up to the first changed or missing byte.
func intactPrefix(t *testing.T, gen string, segs []string, orig map[string][]byte) int {
	n := 0
	for _, path := range segs {
		now, err := os.ReadFile(path)
		if err != nil {
			return max(0, n-1)
		}
		old := orig[path]
		for p := 0; p < len(old); {
			_, end, ok := frameAt(old, p)
			if !ok {
				t.Fatalf("template segment %s unreadable at %d", path, p)
			}
			if end > len(now) || string(now[p:end]) != string(old[p:end]) {
				return max(0, n-1)
			}
			n++
			p = end
		}
	}
	return max(0, n-1) // entries counted include the checkpoint
}
