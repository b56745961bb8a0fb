package mmap

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/isb/codec"
)

type orderA struct{ ID int64 }
type orderB struct{ ID int64 }

// createInt64 creates a topic of int64 items written with JSON, 2
// partitions, with one item in each.
func createInt64(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	b, err := New[int64](dir, SegmentSize(MinSegmentSize))
	if err == nil {
		_, err = b.Open(testTopic, 2)
	}
	if err != nil {
		t.Fatal(err)
	}
	for p := range 2 {
		if _, err := waitWrite(b.Partition(p).Append([]int64{int64(40 + p)})); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// wantMismatch checks that err is a *MismatchError of field with the
// stored and asked values, naming the metadata file.
func wantMismatch(t *testing.T, err error, field, stored, asked string) {
	t.Helper()
	var me *MismatchError
	if !errors.As(err, &me) || !errors.Is(err, ErrMismatch) {
		t.Fatalf("err = %v, want a *MismatchError", err)
	}
	if me.Field != field || me.Stored != stored || me.Asked != asked || filepath.Base(me.File) != metaFile {
		t.Fatalf("mismatch %+v, want %s stored %q asked %q in %s", me, field, stored, asked, metaFile)
	}
	for _, s := range []string{field, stored, asked} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("message %q does not say %q", err, s)
		}
	}
}

// A different partition count would move keyed items to other partitions:
// more partitions than stored are refused as well as fewer, and nothing
// is created.
func TestOpenWithOtherPartitionCount(t *testing.T) {
	dir := createInt64(t)
	for _, n := range []int{1, 3} {
		b, err := New[int64](dir)
		if err != nil {
			t.Fatal(err)
		}
		wantMismatch(t, errOf(b.Open(testTopic, n)), "partition count", "2", strconv.Itoa(n))
	}
	if exists(filepath.Join(dir, testTopic, partitionDirName(2))) {
		t.Fatal("a refused open created a partition")
	}
}

// An int64 topic written with JSON, opened with the raw codec, would read
// every item as a wrong value without an error.
func TestOpenWithOtherCodec(t *testing.T) {
	dir := createInt64(t)
	raw, err := codec.Raw[int64]()
	if err != nil {
		t.Fatal(err)
	}
	b, err := New[int64](dir, WithCodec(raw))
	if err != nil {
		t.Fatal(err)
	}
	wantMismatch(t, errOf(b.Open(testTopic, 2)), "codec", codec.JSON[int64]().Name(), raw.Name())
}

// A topic of one struct type opened as another would decode zero values.
func TestOpenWithOtherElementType(t *testing.T) {
	dir := t.TempDir()
	a, err := New[orderA](dir, SegmentSize(MinSegmentSize))
	if err == nil {
		_, err = a.Open(testTopic, 1)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := waitWrite(a.Partition(0).Append([]orderA{{ID: 7}})); err != nil {
		t.Fatal(err)
	}
	a.Close()
	b, err := New[orderB](dir, SegmentSize(MinSegmentSize))
	if err != nil {
		t.Fatal(err)
	}
	pkg := "github.com/runnel-dev/runnel/isb/mmap."
	wantMismatch(t, errOf(b.Open(testTopic, 1)), "element type", pkg+"orderA", pkg+"orderB")
	// The same type opens and reads what was written.
	a2, err := New[orderA](dir, SegmentSize(MinSegmentSize))
	if err == nil {
		_, err = a2.Open(testTopic, 1)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	if _, got, err := a2.Partition(0).Read(bg, 0, 1, nil); err != nil || got[0].ID != 7 {
		t.Fatalf("read %v, %v", got, err)
	}
}

// A damaged metadata file, or partitions without one, is a *CorruptError:
// the topic cannot be checked, so it is not guessed.
func TestTopicMetaDamage(t *testing.T) {
	dir := createInt64(t)
	path := filepath.Join(dir, testTopic, metaFile)
	data, _ := os.ReadFile(path)
	data[9] ^= 1
	os.WriteFile(path, data, 0o644)
	b, _ := New[int64](dir)
	wantCorrupt(t, errOf(b.Open(testTopic, 2)), metaFile)
	os.Remove(path)
	b, _ = New[int64](dir)
	wantCorrupt(t, errOf(b.Open(testTopic, 2)), metaFile)
}

// A partition directory beyond the stored count is named, the highest
// one, with the count that would include it.
func TestStrayPartitionsNameTheHighest(t *testing.T) {
	dir := createInt64(t)
	for _, id := range []int{3, 2} {
		os.Mkdir(filepath.Join(dir, testTopic, partitionDirName(id)), 0o755)
	}
	b, _ := New[int64](dir)
	_, err := b.Open(testTopic, 2)
	wantCorrupt(t, err, partitionDirName(3))
	if !strings.Contains(err.Error(), "at least 4") {
		t.Fatalf("error %q does not say how many partitions the directory holds", err)
	}
}
