//go:build linux

package mmap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/runnel-dev/runnel/internal/crashtest"
)

// The full-disk test (Linux: it mounts a tmpfs): on a tmpfs of 64 KiB that the test mounts, a child
// produces one item whose record ends exactly at byte 4096 of its segment
// (the rest of the segment is a hole) and exits without Close; the test
// fills the tmpfs and a second child reopens the topic. Recovery reads the
// bytes after that record, where a read of the hole through the mapping
// needs a page the full tmpfs cannot give: the kernel sends SIGBUS, which
// killed the process. Reopening must instead recover the item or fail
// with an error naming the file; once space is freed, it recovers the
// item.

const fullSegment = 16 << 10

func init() {
	children["fullproduce"] = fullProduceChild
	children["fullreopen"] = fullReopenChild
}

// fullItem is the item whose record (32-byte segment header, 16-byte
// record header, the JSON string, 4-byte end marker) ends at byte 4096.
var fullItem = strings.Repeat("x", 4096-segmentHeaderSize-recordOverhead-2)

func fullProduceChild() {
	b, err := openErr(os.Getenv("MMAP_TEST_DIR"), 1, SegmentSize(fullSegment))
	if err != nil {
		fmt.Println("E open:", err)
		os.Exit(1)
	}
	if _, err := waitWrite(b.Partition(0).Append([]string{fullItem})); err != nil {
		fmt.Println("E append:", err)
		os.Exit(1)
	}
	fmt.Println("P")
	os.Exit(0) // no Close: what a crash leaves
}

func fullReopenChild() {
	testNoHoles = os.Getenv("MMAP_TEST_NOHOLES") != ""
	b, err := openErr(os.Getenv("MMAP_TEST_DIR"), 1, SegmentSize(fullSegment))
	if fe, ok := errors.AsType[*FaultError](err); ok {
		fmt.Printf("FAULT %s %d\n", fe.File, fe.Offset)
		os.Exit(0)
	}
	if errors.Is(err, syscall.ENOSPC) {
		fmt.Printf("NOSPACE %v\n", err)
		os.Exit(0)
	}
	if err != nil {
		fmt.Printf("ERR %v\n", err)
		os.Exit(0)
	}
	got, err := readUntilError(b.Partition(0))
	fmt.Printf("OK %d %v %v\n", len(got), len(got) == 1 && got[0] == fullItem, err)
	os.Exit(0)
}

func TestRecoveryOnFullTmpfs(t *testing.T) {
	for _, noHoles := range []bool{false, true} {
		t.Run(fmt.Sprintf("holes reported %v", !noHoles), func(t *testing.T) {
			mnt := t.TempDir()
			if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=64k"); err != nil {
				t.Skipf("cannot mount a tmpfs here (%v): this test needs root or CAP_SYS_ADMIN", err)
			}
			t.Cleanup(func() { syscall.Unmount(mnt, 0) }) // before TempDir's removal
			dir := filepath.Join(mnt, "data")
			if out, err := fullChild(dir, "fullproduce", false); err != nil || out != "P" {
				t.Fatalf("producing child: %v: %s", err, out)
			}
			fill := fillDisk(t, mnt)
			out, err := fullChild(dir, "fullreopen", noHoles)
			if err != nil {
				t.Fatalf("reopening on the full tmpfs killed the process (%v): %s", err, out)
			}
			t.Logf("reopen on the full tmpfs: %s", out)
			seg := filepath.Join(partDir(dir, 0), segmentFileName(0))
			switch {
			case out == "OK 1 true <nil>":
				// Recovered without needing a page.
			case noHoles && out == fmt.Sprintf("FAULT %s %d", seg, 4096):
				// The scan read the hole after the record through the
				// mapping: a typed error naming segment and byte.
			case !noHoles && strings.HasPrefix(out, "NOSPACE ") && strings.Contains(out, filepath.Join(partDir(dir, 0), producerFile)):
				// The scan stopped at the hole and found the item; storing
				// the recovered tail in producer.offset needs a page.
			default:
				t.Fatalf("reopen on the full tmpfs: %s", out)
			}
			// With space again, the item is there and the log goes on.
			if err := os.Remove(fill); err != nil {
				t.Fatal(err)
			}
			b := open(t, dir, 1, SegmentSize(fullSegment))
			l := b.Partition(0)
			if got := readAll(t, l); len(got) != 1 || got[0] != fullItem {
				t.Fatalf("after freeing space: %d items", len(got))
			}
			if off, err := waitWrite(l.Append([]string{"next"})); err != nil || off != 1 {
				t.Fatalf("Append = %d, %v", off, err)
			}
			if _, got, err := l.Read(bg, 1, 1, nil); err != nil || len(got) != 1 || got[0] != "next" {
				t.Fatalf("Read(1) = %q, %v", got, err)
			}
		})
	}
}

// fullChild runs a child of the full-disk test and returns its output.
func fullChild(dir, kind string, noHoles bool) (string, error) {
	env := []string{"MMAP_TEST_DIR=" + dir}
	if noHoles {
		env = append(env, "MMAP_TEST_NOHOLES=1")
	}
	out, stderr, err := crashtest.Run(kind, env...)
	if err != nil {
		return out + "\n" + firstLines(stderr, 3), err
	}
	return out, nil
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// fillDisk writes a file in mnt until the file system is full.
func fillDisk(t *testing.T, mnt string) string {
	t.Helper()
	path := filepath.Join(mnt, "fill")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, 4096)
	for i := range page {
		page[i] = 1
	}
	for {
		if _, err := f.Write(page); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return path
		}
	}
}
