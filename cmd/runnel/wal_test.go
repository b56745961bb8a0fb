package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/wal"
)

var walBase = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// window i: [walBase + 10s·i, +10s).
func walWindow(i int) wal.Window {
	s := walBase.Add(time.Duration(i) * 10 * time.Second)
	return wal.Window{Start: s, End: s.Add(10 * time.Second)}
}

// writeWAL writes a log as a reduce would: six messages of partitions 3
// and 4 in windows 0, 1 and 2, then window 0 closed; closed cleanly.
func writeWAL(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	w, err := wal.Open(dir, wal.Metadata(map[string]string{"partition": "3", "window.kind": "fixed"}))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		e := wal.Entry{Partition: int32(3 + i%2), Offset: int64(10 + i), EventTime: walWindow(i % 3).Start, ID: fmt.Sprint(i),
			Keys: []string{"k"}, Windows: []wal.Window{walWindow(i % 3)}, Value: []byte("v")}
		if err := w.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.GC(ctx, walWindow(0).End, walWindow(0)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// dirBytes sums the sizes of the files under dir.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return err
	})
	return n
}

// TestInspectWAL: the human output of a WAL directory, line by line: its
// entries, the open windows and messages (window 0 closed), last offsets,
// the GC watermark, its segment.
func TestInspectWAL(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "partition-3")
	writeWAL(t, dir)
	seg := filepath.Join("gen-00000000000000000001", "00000000000000000001")
	st, err := os.Stat(filepath.Join(dir, seg))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`wal .: generation 1, 8 entries (6 messages, 1 GC event), 4 open messages in 2 windows, %d bytes, closed cleanly at entry 8
  metadata: partition=3 window.kind=fixed
  last offsets: partition 3 at 14, partition 4 at 15; GC watermark 2024-05-01T12:00:10Z
  segment %s: entries from 1, 8 intact, %d bytes
  open window [2024-05-01T12:00:10Z, 2024-05-01T12:00:20Z)
  open window [2024-05-01T12:00:20Z, 2024-05-01T12:00:30Z)
`, dirBytes(t, dir), seg, st.Size())
	for _, command := range []string{"inspect", "verify"} {
		code, out, errs := runCLI(t, command, dir)
		summary := command + ": 0 topics, 1 WAL, 0 source states; 0 damage, 0 repairs: clean\n"
		if command == "verify" {
			summary = "verify: 0 topics, 1 WAL, 0 source states; 0 records intact, 0 damaged; 8 WAL entries; 0 damage, 0 repairs: clean\n"
		}
		if code != 0 || errs != "" || out != want+summary {
			t.Fatalf("%s: exit %d, stderr %q, printed\n%s\nwant\n%s", command, code, errs, out, want+summary)
		}
	}
	r := report(t, "inspect", dir, 0)
	w := r.WAL
	if r.Kind != "wal" || w.Dir != dir || w.Generation != 1 || w.Entries != 8 || w.Messages != 6 || w.GCEvents != 1 || w.OpenMessages != 4 ||
		len(w.OpenWindows) != 2 || !w.OpenWindows[0].Start.Equal(walWindow(1).Start) || w.ClosedAt != 8 || !w.Clean ||
		fmt.Sprint(w.LastOffsets) != "map[3:14 4:15]" || !w.Watermark.Equal(walWindow(0).End) {
		t.Fatalf("report %+v, wal %+v", r, w)
	}
}

// TestVerifyWALTornTail: bytes of a write batch cut short at the end of
// the last segment, as a crash leaves them: a repair the next open makes
// (exit 0), at the byte where the log ends.
func TestVerifyWALTornTail(t *testing.T) {
	dir := t.TempDir()
	writeWAL(t, dir)
	seg := filepath.Join(dir, "gen-00000000000000000001", "00000000000000000001")
	st, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{40, 1, 2, 3, 4, 5}) // a frame of 40 bytes, 5 of them written
	f.Close()
	r := report(t, "verify", dir, 0)
	if r.Status != "clean" || len(r.Damage) != 0 || len(r.Repairs) != 1 || r.WAL.Entries != 8 || r.WAL.Clean {
		t.Fatalf("report %+v", r)
	}
	want := Repair{File: seg, Offset: st.Size(), What: "entry 9: a torn tail of 6 bytes (damaged entry: tidwall/wal frame length is not a uvarint within the file), " +
		"the write batch a crash interrupted, never acknowledged: the next open cuts it, with 0 intact entries of that batch"}
	if r.Repairs[0] != want {
		t.Fatalf("repair %+v\nwant %+v", r.Repairs[0], want)
	}
}

// TestVerifyWALDamagedEntry: a damaged entry of a log closed cleanly is
// damage (exit 1), named by file, entry and byte.
func TestVerifyWALDamagedEntry(t *testing.T) {
	dir := t.TempDir()
	writeWAL(t, dir)
	seg := filepath.Join(dir, "gen-00000000000000000001", "00000000000000000001")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	at := walFrame(t, b, 4)
	flipByte(t, seg, int64(at)+30)
	r := report(t, "verify", dir, 1)
	if len(r.Damage) != 1 || r.WAL.Entries != 7 || r.WAL.Messages != 5 {
		t.Fatalf("report %+v, wal %+v", r, r.WAL)
	}
	d := r.Damage[0]
	if d.File != seg || d.Entry != 4 || d.Offset != int64(at) || !strings.HasPrefix(d.Reason, "damaged entry: crc32c ") ||
		!strings.HasSuffix(d.Reason, "so the damage is not a torn tail of batch 3") {
		t.Fatalf("damage %+v, want entry 4 at byte %d of %s", d, at, seg)
	}
}
