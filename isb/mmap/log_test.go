package mmap

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/codec"
)

// TestOpenCaps: partitions serialize their own appends, and their Writes
// are deferred to the flush unless Interval publishes them at once; the
// Write of an Append reports its last item, complete or not.
func TestOpenCaps(t *testing.T) {
	for _, tc := range []struct {
		policy FlushPolicy
		want   isb.Caps
	}{
		{Immediate(), isb.Caps{Concurrent: true, Deferred: true}},
		{Batch(10), isb.Caps{Concurrent: true, Deferred: true}},
		{Interval(time.Hour), isb.Caps{Concurrent: true}},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			b, err := New[string](t.TempDir(), SegmentSize(MinSegmentSize), Flush(tc.policy))
			if err != nil {
				t.Fatal(err)
			}
			caps, err := b.Open(testTopic, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if caps != tc.want {
				t.Fatalf("Open = %+v, want %+v", caps, tc.want)
			}
			w, err := b.Partition(0).Append([]string{item(0), item(1)})
			if err != nil || w.Pending() != tc.want.Deferred || w.Last() != 1 {
				t.Fatalf("Append = pending %v, last %d, %v; want pending %v, last 1", w.Pending(), w.Last(), err, tc.want.Deferred)
			}
			if last, err := w.Wait(bg); err != nil || last != 1 || b.Partition(0).Tail() != 2 {
				t.Fatalf("Wait = %d, %v, tail %d; want 1, nil, 2", last, err, b.Partition(0).Tail())
			}
			if last, err := waitWrite(b.Partition(0).AppendOne(item(2))); err != nil || last != 2 {
				t.Fatalf("AppendOne = last %d, %v; want 2, nil", last, err)
			}
			if last, err := waitWrite(b.Partition(0).Append(nil)); err != nil || last != 2 {
				t.Fatalf("empty Append = last %d, %v; want 2 (the tail - 1), nil", last, err)
			}
		})
	}
}

func TestAppendReadAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, 2)
	l := b.Partition(1)
	// ~30-byte records in 4 KiB segments: several rollovers, some in
	// the middle of a batch.
	appendItems(t, l, 0, 1000, 37)
	if l.Head() != 0 || l.Tail() != 1000 {
		t.Fatalf("head, tail = %d, %d; want 0, 1000", l.Head(), l.Tail())
	}
	checkItems(t, readAll(t, l), 0, 1000)
	if n := len(segFiles(t, dir, 1)); n < 5 {
		t.Fatalf("%d segment files, want several", n)
	}
	if b.Partition(0).Tail() != 0 {
		t.Fatal("partition 0 is not empty")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := open(t, dir, 2)
	checkItems(t, readAll(t, b2.Partition(1)), 0, 1000)
	appendItems(t, b2.Partition(1), 1000, 1100, 10)
	checkItems(t, readAll(t, b2.Partition(1)), 0, 1100)
}

// A Read never crosses a segment end and never returns more than max.
func TestReadStopsAtSegmentEnd(t *testing.T) {
	b := open(t, t.TempDir(), 1)
	l := b.Partition(0)
	appendItems(t, l, 0, 400, 400)
	p := l.(*partition[string])
	boundary := p.segs[1].first
	_, got, err := l.Read(bg, boundary-2, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkItems(t, got, int(boundary-2), 2)
	_, got, err = l.Read(bg, boundary, 3, make([]string, 3))
	if err != nil {
		t.Fatal(err)
	}
	checkItems(t, got, int(boundary), 3)
	for _, off := range []int64{-1, 400, 1000} {
		if _, _, err := l.Read(bg, off, 1, nil); !errors.Is(err, isb.ErrOutOfRange) {
			t.Fatalf("Read(%d): err = %v, want isb.ErrOutOfRange", off, err)
		}
	}
}

// A Read of fewer than one item is a caller's mistake, refused as the memory
// backend refuses it, not silently turned into a read of one.
func TestReadSizeBelowOne(t *testing.T) {
	b := open(t, t.TempDir(), 1)
	l := b.Partition(0)
	appendItems(t, l, 0, 5, 5)
	for _, max := range []int{0, -3} {
		_, got, err := l.Read(bg, 0, max, nil)
		if !errors.Is(err, ErrReadSize) || got != nil {
			t.Fatalf("Read(0, %d) = %v, %v; want nil, ErrReadSize", max, got, err)
		}
		if want := fmt.Sprintf("read of %d items", max); !strings.Contains(err.Error(), want) {
			t.Fatalf("Read(0, %d) error %q does not name the size (%q)", max, err, want)
		}
	}
}

func TestTooLargeStoresNothing(t *testing.T) {
	b := open(t, t.TempDir(), 1)
	l := b.Partition(0)
	appendItems(t, l, 0, 3, 3)
	big := strings.Repeat("x", MinSegmentSize)
	_, err := l.Append([]string{item(3), big})
	var te *TooLargeError
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &te) {
		t.Fatalf("err = %v, want *TooLargeError", err)
	}
	if te.Index != 1 || te.Record != recordSize(len(big)+2) || te.Max != MinSegmentSize-segmentHeaderSize {
		t.Fatalf("TooLargeError = %+v", te)
	}
	if l.Tail() != 3 {
		t.Fatalf("tail = %d after a rejected batch, want 3", l.Tail())
	}
	appendItems(t, l, 3, 6, 3)
	checkItems(t, readAll(t, l), 0, 6)
}

func TestEncodeErrorStoresNothing(t *testing.T) {
	b, err := New[float64](t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open("f", 1); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	l := b.Partition(0)
	_, err = l.Append([]float64{1, math.Inf(1)})
	if !errors.Is(err, codec.ErrEncode) {
		t.Fatalf("err = %v, want codec.ErrEncode", err)
	}
	if l.Tail() != 0 {
		t.Fatalf("tail = %d, want 0", l.Tail())
	}
	if last, err := waitWrite(l.Append([]float64{2.5})); err != nil || last != 0 {
		t.Fatalf("Append = last %d, %v; want 0, nil", last, err)
	}
	_, got, err := l.Read(bg, 0, 5, nil)
	if err != nil || len(got) != 1 || got[0] != 2.5 {
		t.Fatalf("Read = %v, %v", got, err)
	}
}

func TestCodecs(t *testing.T) {
	type point struct{ X, Y int32 }
	raw, err := codec.Raw[point]()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []codec.Codec[point]{codec.JSON[point](), codec.MsgPack[point](), raw} {
		t.Run(c.Name(), func(t *testing.T) {
			dir := t.TempDir()
			for round := range 2 {
				b, err := New[point](dir, WithCodec(c))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := b.Open("p", 1); err != nil {
					t.Fatal(err)
				}
				l := b.Partition(0)
				if _, err := waitWrite(l.Append([]point{{int32(round), 1}, {int32(round), 2}})); err != nil {
					t.Fatal(err)
				}
				_, got, err := l.Read(bg, 0, 10, nil)
				want := []point{{0, 1}, {0, 2}, {1, 1}, {1, 2}}[:2*(round+1)]
				if err != nil || len(got) != len(want) {
					t.Fatalf("Read = %v, %v; want %v", got, err, want)
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("Read = %v, want %v", got, want)
					}
				}
				if err := b.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestOptionsValidated(t *testing.T) {
	cases := []struct {
		option string
		opts   []Option
	}{
		{"SegmentSize", []Option{SegmentSize(100)}},
		{"SegmentSize", []Option{SegmentSize(1 << 33)}},
		{"Flush", []Option{Flush(Batch(0))}},
		{"Flush", []Option{Flush(Interval(0))}},
		{"Flush", []Option{Flush(FlushPolicy{})}},
		{"MaxRetainedConsumedSegments", []Option{MaxRetainedConsumedSegments(-1)}},
		{"WithCodec", []Option{WithCodec(codec.JSON[int]())}},
		{"mmap.Option", []Option{nil}},
	}
	for _, tc := range cases {
		_, err := New[string](t.TempDir(), tc.opts...)
		var oe *isb.OptionError
		if !errors.As(err, &oe) || !errors.Is(err, isb.ErrInvalidOption) || oe.Option != tc.option {
			t.Fatalf("%s: err = %v, want *isb.OptionError for it", tc.option, err)
		}
	}
	if _, err := New[string](""); err == nil {
		t.Fatal("empty dir accepted")
	}
	b, err := New[string](t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", ".", "..", "a/b"} {
		if _, err := b.Open(name, 1); !errors.Is(err, ErrInvalidName) {
			t.Fatalf("Open(%q): err = %v, want ErrInvalidName", name, err)
		}
	}
}

func TestCommits(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, 2)
	l := b.Partition(0)
	appendItems(t, l, 0, 10, 10)
	groups := []string{"plain", "", ".", "..", "a/b", "50%", "ünï"}
	for i, g := range groups {
		if c, ok := committed(t, l, g); ok || c != 0 {
			t.Fatalf("Committed(%q) = %d, %v before any commit", g, c, ok)
		}
		if err := l.Commit(bg, g, int64(i+1)); err != nil {
			t.Fatalf("Commit(%q): %v", g, err)
		}
	}
	if err := l.Commit(bg, "plain", 0); err != nil {
		t.Fatal(err)
	}
	if c, _ := committed(t, l, "plain"); c != 1 {
		t.Fatalf("commit moved backwards to %d", c)
	}
	if err := l.Commit(bg, "plain", 11); !errors.Is(err, isb.ErrOutOfRange) {
		t.Fatalf("commit beyond tail: err = %v", err)
	}
	if err := b.Partition(1).Commit(bg, "only-p1", 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b2 := open(t, dir, 2)
	want := []string{"", ".", "..", "50%", "a/b", "only-p1", "plain", "ünï"}
	if got := groupsOf(t, b2); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("Groups() = %q, want %q", got, want)
	}
	for i, g := range groups {
		if c, ok := committed(t, b2.Partition(0), g); !ok || c != int64(i+1) {
			t.Fatalf("Committed(%q) = %d, %v after reopen; want %d", g, c, ok, i+1)
		}
	}
	if _, ok := committed(t, b2.Partition(1), "plain"); ok {
		t.Fatal("partition 1 has a commit of a group that committed only on partition 0")
	}
}

// A commit is a flush boundary: under Interval the records it covers are
// flushed (and the producer checkpoint never passes what is flushed).
func TestFlushPolicies(t *testing.T) {
	t.Run("Immediate", func(t *testing.T) {
		b := open(t, t.TempDir(), 1, Flush(Immediate()))
		p := b.parts[0]
		appendItems(t, p, 0, 5, 1)
		if d := durableTail(p); d != 5 {
			t.Fatalf("durable tail %d, want 5", d)
		}
	})
	t.Run("Batch", func(t *testing.T) {
		b := open(t, t.TempDir(), 1, Flush(Batch(4)))
		p := b.parts[0]
		appendItems(t, p, 0, 3, 1)
		if d := durableTail(p); d != 0 {
			t.Fatalf("durable tail %d after 3 of Batch(4), want 0", d)
		}
		appendItems(t, p, 3, 4, 1)
		if d := durableTail(p); d != 4 {
			t.Fatalf("durable tail %d after 4 of Batch(4), want 4", d)
		}
		appendItems(t, p, 4, 6, 1)
		if err := p.Commit(bg, "g", 5); err != nil {
			t.Fatal(err)
		}
		if d := durableTail(p); d != 6 {
			t.Fatalf("durable tail %d after a commit, want 6", d)
		}
	})
	t.Run("Interval", func(t *testing.T) {
		b := open(t, t.TempDir(), 1, Flush(Interval(time.Millisecond)))
		p := b.parts[0]
		appendItems(t, p, 0, 3, 3)
		deadline := time.Now().Add(10 * time.Second)
		for durableTail(p) != 3 {
			if time.Now().After(deadline) {
				t.Fatal("the interval flusher never flushed")
			}
			time.Sleep(time.Millisecond)
		}
	})
	t.Run("Close", func(t *testing.T) {
		dir := t.TempDir()
		b := open(t, dir, 1, Flush(Batch(1000)))
		appendItems(t, b.Partition(0), 0, 10, 1)
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		v, err := readCheckpoint(filepath.Join(partDir(dir, 0), producerFile), kindProducer)
		if err != nil || v[0] != 10 {
			t.Fatalf("producer checkpoint after Close = %v, %v; want tail 10", v, err)
		}
	})
}

func durableTail(p *partition[string]) int64 {
	p.flushMu.Lock()
	defer p.flushMu.Unlock()
	return p.durable.tail
}

func TestRetention(t *testing.T) {
	t.Run("unset keeps everything", func(t *testing.T) {
		dir := t.TempDir()
		b := open(t, dir, 1)
		l := b.Partition(0)
		appendItems(t, l, 0, 500, 50)
		n := len(segFiles(t, dir, 0))
		if err := l.Commit(bg, "g", 500); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(500); err != nil {
			t.Fatal(err)
		}
		if got := len(segFiles(t, dir, 0)); got != n || l.Head() != 0 {
			t.Fatalf("%d segments (had %d), head %d: something was deleted", got, n, l.Head())
		}
	})
	t.Run("keep 1", func(t *testing.T) {
		dir := t.TempDir()
		b := open(t, dir, 1, MaxRetainedConsumedSegments(1))
		l := b.Partition(0).(*partition[string])
		appendItems(t, l, 0, 500, 50)
		segs := append([]*segment(nil), l.segs...)
		if len(segs) < 4 {
			t.Fatalf("only %d segments", len(segs))
		}
		// A persisted group that has consumed less holds the data.
		if err := l.Commit(bg, "slow", segs[1].first); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(500); err != nil {
			t.Fatal(err)
		}
		if l.Head() != 0 {
			t.Fatalf("head %d: deleted what group slow has not consumed", l.Head())
		}
		if err := l.Commit(bg, "slow", segs[3].first); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(segs[3].first); err != nil {
			t.Fatal(err)
		}
		// Segments 0..2 are consumed; one is kept.
		if l.Head() != segs[2].first {
			t.Fatalf("head %d, want %d", l.Head(), segs[2].first)
		}
		for i, s := range segs {
			if exists(s.path) != (i >= 2) {
				t.Fatalf("segment %d exists=%v", i, exists(s.path))
			}
		}
		if _, _, err := l.Read(bg, segs[2].first-1, 1, nil); !errors.Is(err, isb.ErrOutOfRange) {
			t.Fatalf("read below head: %v", err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		b2 := open(t, dir, 1)
		l2 := b2.Partition(0)
		if l2.Head() != segs[2].first {
			t.Fatalf("head after reopen %d, want %d", l2.Head(), segs[2].first)
		}
		got := readAll(t, l2)
		checkItems(t, got, int(segs[2].first), 500-int(segs[2].first))
	})
}

// Readers of three groups run beside the appender, committing and
// releasing as they go, so segments are deleted under them (run with
// -race): each reads exactly every item, in order.
func TestConcurrentReadAppend(t *testing.T) {
	b := open(t, t.TempDir(), 1, Flush(Batch(50)), MaxRetainedConsumedSegments(0))
	l := b.Partition(0)
	const n = 3000
	var wg sync.WaitGroup
	for g := range 3 {
		group := fmt.Sprint("g", g)
		if err := l.Commit(bg, group, 0); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			buf := make([]string, 16)
			for off := int64(0); off < n; {
				if off >= l.Tail() {
					time.Sleep(10 * time.Microsecond)
					continue
				}
				_, items, err := l.Read(bg, off, len(buf), buf)
				if err != nil {
					t.Error(err)
					return
				}
				for i, it := range items {
					if it != item(int(off)+i) {
						t.Errorf("offset %d = %q", int(off)+i, it)
						return
					}
				}
				off += int64(len(items))
				if off%100 < 16 {
					if err := l.Commit(bg, group, off); err != nil {
						t.Error(err)
						return
					}
					// Release folds in every group's stored commit.
					if err := l.Release(off); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	appendItems(t, l, 0, n, 7)
	wg.Wait()
	if l.Head() == 0 {
		t.Fatal("nothing was released: the test did not race deletion")
	}
}

func TestClosed(t *testing.T) {
	b := open(t, t.TempDir(), 1)
	l := b.Partition(0)
	appendItems(t, l, 0, 2, 2)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := l.Append([]string{"x"}); !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if _, _, err := l.Read(bg, 0, 1, nil); !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
	if err := l.Commit(bg, "g", 1); !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("Commit after Close: %v", err)
	}
}

func TestLayout(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, 1)
	appendItems(t, b.Partition(0), 0, 3, 3)
	if err := b.Partition(0).Commit(bg, "a/b", 2); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{segmentFileName(0), producerFile, earliestFile, filepath.Join(offsetsDir, "a%2Fb", consumerFile)} {
		if !exists(filepath.Join(partDir(dir, 0), f)) {
			t.Fatalf("%s missing", f)
		}
	}
	st, err := os.Stat(filepath.Join(partDir(dir, 0), segmentFileName(0)))
	if err != nil || st.Size() != MinSegmentSize {
		t.Fatalf("segment size %v, %v; want preallocated %d", st.Size(), err, MinSegmentSize)
	}
}

// A fault on a mapping (here a segment truncated under it) is an error of
// the Read, not a crash. Appends do not write through the mapping (see
// segment.go): one after the truncation writes its record with pwrite,
// which regrows the file, and the record reads back.
func TestMappingFaultIsAnError(t *testing.T) {
	b := open(t, t.TempDir(), 1)
	l := b.Partition(0)
	appendItems(t, l, 0, 3, 3)
	if err := os.Truncate(l.(*partition[string]).segs[0].path, 0); err != nil {
		t.Fatal(err)
	}
	_, _, err := l.Read(bg, 0, 1, nil)
	if fe, ok := errors.AsType[*FaultError](err); !ok || !errors.Is(err, ErrFault) || fe.File != l.(*partition[string]).segs[0].path || fe.Offset != segmentHeaderSize {
		t.Fatalf("Read: %v, want a *FaultError naming the segment at byte %d", err, segmentHeaderSize)
	}
	if off, err := waitWrite(l.Append([]string{"x"})); err != nil || off != 3 {
		t.Fatalf("Append = %d, %v; want 3, nil", off, err)
	}
	if _, got, err := l.Read(bg, 3, 1, nil); err != nil || len(got) != 1 || got[0] != "x" {
		t.Fatalf("Read(3) = %q, %v; want [x]", got, err)
	}
}

// Reopening a cleanly closed topic writes nothing; the first append clears
// the clean mark on disk before it writes, so a crash after it is
// recovered as one.
func TestCleanOpenWritesNothing(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, 1)
	appendItems(t, b.Partition(0), 0, 5, 5)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(partDir(dir, 0), producerFile)
	before, _ := os.ReadFile(path)
	v, err := readCheckpoint(path, kindProducer)
	if err != nil || v != (checkpoint{5, 0, v[2], v[3], 1}) {
		t.Fatalf("checkpoint after Close = %v, %v; want tail 5, clean", v, err)
	}
	b2 := open(t, dir, 1)
	after, _ := os.ReadFile(path)
	if string(before) != string(after) || exists(path+tmpSuffix) {
		t.Fatal("a clean open rewrote producer.offset")
	}
	appendItems(t, b2.Partition(0), 5, 6, 1)
	if v, _ := readCheckpoint(path, kindProducer); v[4] != 0 {
		t.Fatalf("checkpoint still clean after an append: %v", v)
	}
}

// TestFailedFlushStoresNothing: an Append whose flush fails returns an
// error, and the topic then releases the items' capacity and the producer
// may retry them; so readers must never see them (they would be read
// twice, and hold capacity the topic no longer counts).
func TestFailedFlushStoresNothing(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, 1, SegmentSize(16<<20), Flush(Immediate()))
	l := b.Partition(0)
	appendItems(t, l, 0, 3, 3)
	// The flush below passes producerCheckpointEvery, so it rewrites
	// producer.offset; a directory in place of its temporary file makes
	// that fail (even for root, unlike a read-only directory).
	tmp := filepath.Join(dir, testTopic, partitionDirName(0), producerFile+tmpSuffix)
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("y", 1<<20)
	batch := []string{big, big, big, big, big}
	w, err := l.Append(batch)
	if err == nil {
		if !w.Pending() {
			t.Fatal("Append under Immediate returned a complete Write before its flush")
		}
		_, err = w.Wait(bg)
	}
	if err == nil {
		t.Fatal("Append succeeded although its producer checkpoint could not be written")
	}
	if got := l.Tail(); got != 3 {
		t.Fatalf("tail = %d after a failed flush, want 3 (the batch must stay invisible)", got)
	}
	if _, _, err := l.Read(bg, 3, 5, nil); !errors.Is(err, isb.ErrOutOfRange) {
		t.Fatalf("Read(3) after a failed flush: err = %v, want isb.ErrOutOfRange", err)
	}
	checkItems(t, readAll(t, l), 0, 3)
	// The failure is sticky: nobody knows what reached the disk.
	if _, err := waitWrite(l.Append([]string{item(3)})); err == nil {
		t.Fatal("Append after a failed flush succeeded, want the sticky error")
	}
}

// TestFailedRolloverLeavesNoSegment: a rollover that cannot publish its new
// segment fails the Append and removes the segment it created.
func TestFailedRolloverLeavesNoSegment(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, 1)
	l := b.Partition(0)
	big := strings.Repeat("x", 3000) // two do not fit in one segment
	if _, err := waitWrite(l.Append([]string{big})); err != nil {
		t.Fatal(err)
	}
	// A directory under the new segment's name makes its rename fail.
	pdir := filepath.Join(dir, testTopic, partitionDirName(0))
	if err := os.Mkdir(filepath.Join(pdir, segmentFileName(1)), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append([]string{big}); err == nil {
		t.Fatal("Append succeeded although its new segment could not be published")
	}
	if got := l.Tail(); got != 1 {
		t.Fatalf("tail = %d after a failed rollover, want 1", got)
	}
	entries, err := os.ReadDir(pdir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), tmpSuffix) {
			t.Fatalf("%s left behind by the failed rollover", e.Name())
		}
	}
	if _, got, err := l.Read(bg, 0, 1, nil); err != nil || len(got) != 1 || got[0] != big {
		t.Fatalf("Read(0) after a failed rollover = %d items, %v; want the first item", len(got), err)
	}
}
