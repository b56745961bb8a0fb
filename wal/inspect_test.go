package wal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// checkInspected runs Inspect on the damaged log of a row of the damage
// table before Open sees it, and checks that it says what Open then does:
// a refusal is damage naming the same file; otherwise no damage, a torn
// tail exactly where Open cuts it, and as many open messages as Replay
// yields. It must change nothing.
func checkInspected(t *testing.T, l *tableLog, want outcome) {
	t.Helper()
	before := snapshotDir(t, l.dir)
	in, err := Inspect(l.dir)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	if after := snapshotDir(t, l.dir); after != before {
		t.Fatalf("Inspect changed the directory:\n%s\n->\n%s", before, after)
	}
	if want.refuse != nil {
		file := want.file(l)
		if !slices.ContainsFunc(in.Damage, func(err error) bool {
			if ce, ok := errors.AsType[*CorruptError](err); ok {
				return ce.File == file
			}
			ve, ok := errors.AsType[*VersionError](err)
			return ok && ve.File == file && errors.Is(want.refuse, ErrVersion)
		}) {
			t.Fatalf("Open refuses (%v) naming %s; Inspect found %v", want.refuse, file, in.Damage)
		}
		return
	}
	if len(in.Damage) != 0 || want.cut != (in.Repair != nil) || in.OpenMessages != want.survive {
		t.Fatalf("Inspect: damage %v, repair %+v, %d open messages; want a cut %v, %d open messages", in.Damage, in.Repair, in.OpenMessages, want.cut, want.survive)
	}
	if r := in.Repair; r != nil && (r.Index != uint64(want.survive)+2 || r.Dropped != want.dropped) {
		t.Fatalf("Inspect: repair %+v; want a cut at entry %d with %d intact entries", r, want.survive+2, want.dropped)
	}
}

// TestInspect: a log with open and closed windows of two partitions and a
// session window, closed cleanly, read exactly.
func TestInspect(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	w := openT(t, dir, Metadata(map[string]string{"partition": "0"}), Seed(map[int32]int64{2: 41}, base.Add(-time.Hour)))
	for i := range 6 {
		appendT(t, w, msg(0, int64(i), i%3), msg(1, int64(10+i), i%3))
	}
	sess := Window{Start: base.Add(time.Minute), End: base.Add(2 * time.Minute), Session: 7}
	later := Window{Start: base.Add(90 * time.Second), End: base.Add(3 * time.Minute), Session: 7}
	e1, e2 := msg(0, 6, 0), msg(0, 7, 0)
	e1.Windows, e2.Windows = []Window{sess}, []Window{later}
	appendT(t, w, e1, e2)
	if err := w.GC(ctx, win(0).End, win(0)); err != nil {
		t.Fatal(err)
	}
	closeT(t, w)
	in, err := Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	gen := filepath.Join(dir, genName(1))
	seg := filepath.Join(gen, segmentName(1))
	st, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	size, err := dirSize(dir)
	if err != nil {
		t.Fatal(err)
	}
	// 1 checkpoint + 6 batches of 2 + 1 of 2 + 1 GC event.
	if in.Dir != dir || in.Generation != 1 || in.Metadata["partition"] != "0" || len(in.Metadata) != 1 ||
		!slices.Equal(in.Segments, []SegmentInfo{{File: seg, First: 1, Entries: 16, Bytes: st.Size()}}) ||
		in.Entries != 16 || in.Messages != 14 || in.GCEvents != 1 || in.OpenMessages != 10 ||
		in.ClosedAt != 16 || !in.Clean || in.Bytes != size || len(in.Damage) != 0 || in.Repair != nil || len(in.Leftovers) != 0 {
		t.Fatalf("Inspect = %+v", in)
	}
	if !in.Watermark.Equal(win(0).End) || fmt.Sprint(in.LastOffsets) != "map[0:7 1:15 2:41]" {
		t.Fatalf("watermark %v, last offsets %v", in.Watermark, in.LastOffsets)
	}
	wantOpen := []Window{win(1), win(2), {Start: sess.Start, End: later.End, Session: 7}}
	if !slices.EqualFunc(in.OpenWindows, wantOpen, func(a, b Window) bool {
		return a.Start.Equal(b.Start) && a.End.Equal(b.End) && a.Session == b.Session
	}) {
		t.Fatalf("open windows %v, want %v", in.OpenWindows, wantOpen)
	}
	// Open agrees: the replay holds the open messages.
	w = openT(t, dir)
	if got := len(replayAll(t, w)); got != in.OpenMessages {
		t.Fatalf("replay holds %d, Inspect said %d", got, in.OpenMessages)
	}
	closeT(t, w)
}

// TestInspectGoesOnAfterDamage: a damaged entry mid-log is named with its
// file, index and byte, and the entries after it are counted.
func TestInspectGoesOnAfterDamage(t *testing.T) {
	for _, c := range []struct {
		name string
		at   int // byte of entry 5's frame to flip
	}{
		{"payload byte", 8},
		{"frame length", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			w := openT(t, dir)
			for i := range 10 {
				appendT(t, w, msg(0, int64(i), 0))
			}
			closeT(t, w)
			seg := filepath.Join(dir, genName(1), segmentName(1))
			b, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			// The frame of entry 5 (index 1 is the checkpoint).
			p := 0
			for range 4 {
				_, end, _ := frameAt(b, p)
				p = end
			}
			_, next, _ := frameAt(b, p)
			b[p+c.at] ^= 0x20
			if err := os.WriteFile(seg, b, 0o644); err != nil {
				t.Fatal(err)
			}
			in, err := Inspect(dir)
			if err != nil {
				t.Fatal(err)
			}
			if in.Entries != 10 || in.Messages != 9 || in.OpenMessages != 9 || len(in.Damage) != 1 || in.Repair != nil || in.Clean {
				t.Fatalf("Inspect = %+v", in)
			}
			ce, ok := errors.AsType[*CorruptError](in.Damage[0])
			if !ok || ce.File != seg || ce.Index != 5 || ce.Offset != int64(p) {
				t.Fatalf("damage %v, want entry 5 of %s at byte %d", in.Damage[0], seg, p)
			}
			// Open's walk names the damage; it is no torn tail, since
			// intact entries of later batches follow.
			prefix := fmt.Sprintf("wal: corrupt %s at entry 5 (byte %d): damaged entry: ", seg, p)
			suffix := fmt.Sprintf("; an intact entry of write batch 5 follows at byte %d, so the damage is not a torn tail of batch 4", next)
			if got := ce.Error(); !strings.HasPrefix(got, prefix) || !strings.HasSuffix(got, suffix) {
				t.Fatalf("damage %q\nwant %q...%q", got, prefix, suffix)
			}
		})
	}
}

// TestInspectNotALog: a missing directory is the file system's error, an
// empty one ErrNotLog.
func TestInspectNotALog(t *testing.T) {
	dir := t.TempDir()
	if _, err := Inspect(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	if _, err := Inspect(dir); !errors.Is(err, ErrNotLog) || err.Error() != "wal: not a log directory: "+dir+" holds neither META nor a generation directory (gen-{n})" {
		t.Fatalf("empty: %v", err)
	}
}
