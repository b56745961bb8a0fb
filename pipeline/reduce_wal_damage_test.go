package pipeline

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/wal"
)

// A reduce stopped cleanly with its windows open, whose WAL then loses a
// byte of its last entry (a failing disk), does not restart with that
// acknowledged message missing from its window: the WAL recorded the
// clean close, so the damage is corruption, and Run says so. Before, Open
// cut the entry as a torn tail and the window was emitted one short.
func TestReduceRefusesDamagedWALAfterCleanStop(t *testing.T) {
	const n = 200
	dir := t.TempDir()
	build := func(src vertex.Source[int]) (*Pipeline, *int64) {
		p := New("d", WithStorage(MMap(dir)))
		s := Source(p, "src", src)
		res, _ := Reduce(p, "count", s, vertex.Fixed(time.Hour), vertex.Counting[int]())
		var total int64
		Sink(p, "out", res, vertex.Func(func(_ context.Context, msgs []vertex.Message[vertex.Windowed[int64]]) error {
			for _, m := range msgs {
				total += m.Value.Value
			}
			return nil
		}))
		return p, &total
	}
	ch := make(chan int, n)
	for i := range n {
		ch <- i
	}
	p, _ := build(vertex.FromChannel(ch))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- p.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for acked(p, "count") < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("first run: %v", err)
	}
	if got := acked(p, "count"); got != n {
		t.Fatalf("the reduce acknowledged %d messages, want %d", got, n)
	}
	seg := newestSegment(t, filepath.Join(dir, "d.wal"))
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-2] ^= 0x20 // in the last entry's value: its crc no longer matches
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	closed := make(chan int)
	close(closed)
	p, total := build(vertex.FromChannel(closed))
	err = p.Run(context.Background())
	if ce, ok := errors.AsType[*wal.CorruptError](err); !ok || ce.File != seg {
		t.Fatalf("second run: %v (results counted %d of %d messages), want a *wal.CorruptError naming %s", err, *total, n, seg)
	}
}

// acked returns the messages vertex name acknowledged.
func acked(p *Pipeline, name string) int64 {
	for _, s := range p.Stats() {
		if s.Name == name {
			return s.Acked
		}
	}
	return 0
}

// newestSegment returns the one WAL segment file under root written last
// (wherever the WAL's layout puts it).
func newestSegment(t *testing.T, root string) string {
	t.Helper()
	isSegment := regexp.MustCompile(`^[0-9]{20}$`)
	var newest string
	var at time.Time
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isSegment.MatchString(d.Name()) {
			return err
		}
		info, err := d.Info()
		if err == nil && info.Size() > 0 && (newest == "" || info.ModTime().After(at)) {
			newest, at = path, info.ModTime()
		}
		return err
	})
	if err != nil || newest == "" {
		t.Fatalf("no WAL segment under %s: %v", root, err)
	}
	return newest
}
