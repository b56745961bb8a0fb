package mmap

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
)

// damagedTopicDir writes 100 items to each of 2 partitions and damages
// the record at offset 10 of partition 0 (a payload byte: the records
// after it stay intact).
func damagedTopicDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	tp, err := NewTopic[string](dir, testTopic, SegmentSize(MinSegmentSize), Topic(isb.Partitions(2)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pr := tp.Producer(nil)
	for p := range 2 {
		items := make([]string, 100)
		for i := range items {
			items[i] = fmt.Sprintf("%d:%d", p, i)
		}
		if _, err := pr.ProduceTo(ctx, p, items); err != nil {
			t.Fatal(err)
		}
	}
	if err := tp.Close(); err != nil {
		t.Fatal(err)
	}
	seg := segFiles(t, dir, 0)[0]
	flipByte(t, seg, int64(positions(t, seg, 0)[10]+recordHeaderSize+1))
	return dir
}

func openDamaged(t *testing.T, dir string) *isb.Topic[string] {
	t.Helper()
	tp, err := NewTopic[string](dir, testTopic, SegmentSize(MinSegmentSize), Topic(isb.Partitions(2)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Close() })
	return tp
}

// On real storage, a consumer owning both partitions gets all of the
// undamaged partition while the damaged one reports its record in its
// turn; Skip steps past it and the rest of the partition follows.
func TestConsumerOnDamagedPartition(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tp := openDamaged(t, damagedTopicDir(t))
	c, err := tp.PullConsumer("g", isb.BatchSize(8))
	if err != nil {
		t.Fatal(err)
	}
	got := [2][]string{}
	for len(got[1]) < 100 {
		b, err := c.Pull(ctx)
		if err != nil {
			var re *isb.ReadError
			var ce *CorruptError
			if !errors.As(err, &re) || !errors.As(err, &ce) || re.Partition != 0 || re.Offset != 10 {
				t.Fatalf("Pull: %v; want a *isb.ReadError of partition 0 offset 10 wrapping a *CorruptError", err)
			}
			if filepath.Base(ce.File) != segmentFileName(0) {
				t.Fatalf("damage reported in %s", ce.File)
			}
			continue
		}
		got[b.Partition] = append(got[b.Partition], b.Items...)
	}
	if len(got[0]) != 10 {
		t.Fatalf("partition 0 delivered %d items before the damage, want 10", len(got[0]))
	}
	if off, err := c.Skip(0); off != 10 || err != nil {
		t.Fatalf("Skip(0) = %d, %v", off, err)
	}
	for len(got[0]) < 99 {
		b, err := c.Pull(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got[b.Partition] = append(got[b.Partition], b.Items...)
	}
	for p := range 2 {
		for i, it := range got[p] {
			n := i
			if p == 0 && i >= 10 {
				n++
			}
			if want := fmt.Sprintf("%d:%d", p, n); it != want {
				t.Fatalf("partition %d item %d = %q, want %q", p, i, it, want)
			}
		}
	}
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	if p := tp.Pending("g"); p != 0 {
		t.Fatalf("Pending = %d, want 0", p)
	}
}

// A push consumer reports the damaged record, steps past it and handles
// all 199 intact items.
func TestPushOnDamagedPartition(t *testing.T) {
	tp := openDamaged(t, damagedTopicDir(t))
	var mu sync.Mutex
	var items, reports []string
	pc, err := tp.Subscribe("g", func(_ context.Context, b isb.Batch[string]) error {
		mu.Lock()
		defer mu.Unlock()
		items = append(items, b.Items...)
		return nil
	}, isb.BatchSize(8), isb.ManualCommit(), isb.OnError(func(p int, off int64, err error) {
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, fmt.Sprintf("%d/%d %v", p, off, errors.Is(err, isb.ErrCorrupt)))
	}))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for tp.Pending("g") != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := pc.Stop(); err != nil {
		t.Fatal(err)
	}
	if len(items) != 199 || slices.Contains(items, "0:10") {
		t.Fatalf("handled %d items, want the 199 intact ones", len(items))
	}
	if !slices.Equal(reports, []string{"0/10 true"}) || pc.Skipped() != 1 {
		t.Fatalf("reports %v, skipped %d; want one corrupt report at 0/10 and one skip", reports, pc.Skipped())
	}
}
