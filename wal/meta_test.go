package wal

import (
	"encoding/binary"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/crc32c"

	"github.com/runnel-dev/runnel/isb"
)

// TestMetadataRecord: Open records the metadata of a log it creates and
// says it created it; a later Open reports the stored record, not the one
// asked for, and that the log existed; SetMetadata replaces the record.
func TestMetadataRecord(t *testing.T) {
	dir := t.TempDir()
	first := map[string]string{"window": "fixed 24h", "partition": "3"}
	w := openT(t, dir, Metadata(first))
	rec := w.Recovered()
	if !rec.Created || !maps.Equal(rec.Metadata, first) {
		t.Fatalf("new log: Created %v, Metadata %v; want true, %v", rec.Created, rec.Metadata, first)
	}
	appendT(t, w, msg(3, 1, 0))
	closeT(t, w)

	w = openT(t, dir, Metadata(map[string]string{"window": "fixed 10m"}))
	rec = w.Recovered()
	if rec.Created || !maps.Equal(rec.Metadata, first) {
		t.Fatalf("existing log: Created %v, Metadata %v; want false, the stored %v", rec.Created, rec.Metadata, first)
	}
	second := map[string]string{"window": "fixed 10m", "partition": "3", "": "empty key", "v": ""}
	if err := w.SetMetadata(second); err != nil {
		t.Fatal(err)
	}
	closeT(t, w)
	if err := w.SetMetadata(first); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetMetadata after Close: %v, want ErrClosed", err)
	}

	w = openT(t, dir)
	defer closeT(t, w)
	if rec := w.Recovered(); rec.Created || !maps.Equal(rec.Metadata, second) || rec.Entries != 1 {
		t.Fatalf("after SetMetadata: %+v, want the record %v and the entry", rec, second)
	}
}

// TestDeletedGenerationIsRefused: a directory whose metadata record says a
// log lives there but whose live generation is gone is refused with a
// *CorruptError naming it, and left as it is; before the record existed
// (issue 18, defect 9) Open made an empty log of it.
func TestDeletedGenerationIsRefused(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir)
	appendT(t, w, msg(0, 1, 0), msg(0, 2, 0))
	closeT(t, w)
	gens, _ := filepath.Glob(filepath.Join(dir, genPrefix+"*"))
	for _, g := range gens {
		if err := os.RemoveAll(g); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // refused twice: the first refusal changed nothing
		_, err := Open(dir)
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.File != dir {
			t.Fatalf("Open: %v, want a *CorruptError naming %s", err, dir)
		}
	}
	// Removing the directory is the way to start an empty log.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	w = openT(t, dir)
	defer closeT(t, w)
	if rec := w.Recovered(); !rec.Created || rec.Entries != 0 {
		t.Fatalf("recreated log: %+v", rec)
	}
}

// TestSeedCheckpoint: a log created with Seed reports the seeded offsets
// and watermark, also after a compaction; an existing log ignores Seed.
func TestSeedCheckpoint(t *testing.T) {
	dir := t.TempDir()
	wm := base.Add(time.Hour)
	w := openT(t, dir, Seed(map[int32]int64{2: 500, 4: 9}, wm))
	rec := w.Recovered()
	if !rec.Created || !maps.Equal(rec.LastOffsets, map[int32]int64{2: 500, 4: 9}) || !rec.Watermark.Equal(wm) {
		t.Fatalf("seeded log: %+v", rec)
	}
	appendT(t, w, msg(2, 501, 0), msg(2, 502, 1))
	if err := w.GC(ctx, win(0).End, win(0)); err != nil {
		t.Fatal(err)
	}
	if err := w.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	closeT(t, w)
	w = openT(t, dir, Seed(map[int32]int64{2: 1}, base))
	defer closeT(t, w)
	rec = w.Recovered()
	if rec.Created || !maps.Equal(rec.LastOffsets, map[int32]int64{2: 502, 4: 9}) || !rec.Watermark.Equal(wm) {
		t.Fatalf("reopened seeded log: %+v, want offsets {2: 502, 4: 9} and watermark %v", rec, wm)
	}
	checkEntries(t, replayAll(t, w), []Entry{msg(2, 502, 1)})
	if _, err := Open(t.TempDir(), Seed(nil, time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC))); !errors.Is(err, isb.ErrInvalidOption) {
		t.Fatalf("Seed with a watermark in 3000: %v, want an option error", err)
	}
}

// TestGCAsync: GCs handed to several logs at once are all durable after
// their Waits, and close the windows in each.
func TestGCAsync(t *testing.T) {
	var logs []*WAL
	var dirs []string
	for p := range int32(3) {
		dir := t.TempDir()
		w := openT(t, dir)
		appendT(t, w, msg(p, 1, 0), msg(p, 2, 1))
		logs, dirs = append(logs, w), append(dirs, dir)
	}
	var ps []*Pending
	for _, w := range logs {
		p, err := w.GCAsync(ctx, win(0).End, win(0))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	for i, p := range ps {
		if err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		closeT(t, logs[i])
	}
	for p, dir := range dirs {
		w := openT(t, dir)
		checkEntries(t, replayAll(t, w), []Entry{msg(int32(p), 2, 1)})
		if wm := w.Recovered().Watermark; !wm.Equal(win(0).End) {
			t.Errorf("log %d: watermark %v, want %v", p, wm, win(0).End)
		}
		closeT(t, w)
	}
	if p, err := logs[0].GCAsync(ctx, base); err != nil || p.Wait(ctx) != nil {
		t.Fatalf("GCAsync of no windows on a closed log: %v (it writes nothing)", err)
	}
}

// FuzzDecodeMeta feeds the metadata decoder arbitrary bodies under a
// matching header: it must not panic, must fail with a *CorruptError, and
// what it decodes must encode to the same bytes (keys sorted, distinct).
func FuzzDecodeMeta(f *testing.F) {
	f.Add(encodeMeta(map[string]string{"window.kind": "fixed", "window.length": "24h0m0s"})[metaHeaderSize:])
	f.Add(encodeMeta(map[string]string{})[metaHeaderSize:])
	f.Add(encodeMeta(map[string]string{"": "", "ключ": "\x00"})[metaHeaderSize:])
	f.Add([]byte{2, 1, 'a', 0, 1, 'a', 0}) // a repeated key
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, body []byte) {
		b := make([]byte, metaHeaderSize, metaHeaderSize+len(body))
		copy(b, metaMagic)
		binary.LittleEndian.PutUint32(b[4:], metaVersion)
		binary.LittleEndian.PutUint32(b[8:], uint32(len(body)))
		binary.LittleEndian.PutUint32(b[12:], crc32c.Checksum(body))
		b = append(b, body...)
		m, err := decodeMeta("META", b)
		if err != nil {
			if ce, ok := errors.AsType[*CorruptError](err); !ok || ce.File != "META" {
				t.Fatalf("decode error %v is not a *CorruptError naming the file", err)
			}
			return
		}
		again, err := decodeMeta("META", encodeMeta(m))
		if err != nil || !maps.Equal(again, m) {
			t.Fatalf("%q decodes to %v, which encodes to bytes that decode to %v (%v)", b, m, again, err)
		}
	})
}
