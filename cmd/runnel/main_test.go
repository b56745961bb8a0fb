package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/mmap"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runCLI runs the command in-process as a shell would run it with args.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// report runs command with -json on dir and decodes the report; the exit
// code must be want.
func report(t *testing.T, command, dir string, want int) *Report {
	t.Helper()
	code, out, errs := runCLI(t, command, "-json", dir)
	if code != want {
		t.Fatalf("runnel %s -json %s: exit %d, want %d\nstdout %s\nstderr %s", command, dir, code, want, out, errs)
	}
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("decode the report: %v\n%s", err, out)
	}
	return &r
}

// Test topic: 2 partitions of 300 JSON strings of 12 bytes, records of 32
// bytes in 4 KiB segments: 127 records per segment.
const (
	topicItems   = 600
	perSegment   = (mmap.MinSegmentSize - 32) / 32
	billingFirst = 120 // the commit of group billing in partition 0
)

// writeTopic writes the test topic through isb on mmap under root and
// returns its directory: items round-robin, group billing committed at
// billingFirst in partition 0 and at the end in partition 1, group audit
// at 1 in partition 0 (and at 0 in partition 1, where its consumer
// committed its start).
func writeTopic(t *testing.T, root string) string {
	t.Helper()
	ctx := context.Background()
	topic, err := mmap.NewTopic[string](root, "orders", mmap.Topic(isb.Partitions(2)), mmap.SegmentSize(mmap.MinSegmentSize))
	if err != nil {
		t.Fatal(err)
	}
	items := make([]string, topicItems)
	for i := range items {
		items[i] = fmt.Sprintf("order-%04d", i)
	}
	if err := topic.Producer(nil).ProduceBatch(ctx, items); err != nil {
		t.Fatal(err)
	}
	commit := func(group string, want map[int]int64) {
		c, err := topic.PullConsumer(group, isb.ManualCommit())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got := map[int]int64{}
		for len(got) < len(want) {
			b, err := c.Pull(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if w, ok := want[b.Partition]; ok && b.End() >= w {
				got[b.Partition] = w
			}
		}
		for p, off := range got {
			if err := c.CommitTo(p, off); err != nil {
				t.Fatal(err)
			}
		}
	}
	commit("billing", map[int]int64{0: billingFirst, 1: topicItems / 2})
	commit("audit", map[int]int64{0: 1})
	if err := topic.Close(); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "orders")
}

// disk is the bytes the file occupies on disk, as the command reports it.
func disk(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Blocks * 512
}

func segName(first int64) string { return fmt.Sprintf("%020d.seg", first) }

// TestInspectTopic: the human output of inspect and verify on a clean
// topic, line by line, and the exit code 0.
func TestInspectTopic(t *testing.T) {
	dir := writeTopic(t, t.TempDir())
	for _, command := range []string{"inspect", "verify"} {
		code, out, errs := runCLI(t, command, dir)
		if code != 0 || errs != "" {
			t.Fatalf("%s: exit %d, stderr %q", command, code, errs)
		}
		var want strings.Builder
		fmt.Fprintf(&want, "topic .: format 1, 2 partitions, codec json, element type string (retention and capacity are options of the open, not recorded)\n")
		for p := range 2 {
			fmt.Fprintf(&want, "  partition %d: offsets [0, 300), 300 records, producer checkpoint at 300, closed cleanly\n", p)
			for first := int64(0); first < 300; first += perSegment {
				next := min(first+perSegment, 300)
				state := "sealed"
				if next == 300 {
					state = "active"
				}
				file := filepath.Join(dir, fmt.Sprintf("partition-%05d", p), segName(first))
				checked := ""
				if command == "verify" {
					checked = fmt.Sprintf("; %d intact, 0 damaged, records end at byte %d", next-first, 32+32*(next-first))
				}
				fmt.Fprintf(&want, "    segment %s: offsets [%d, %d), %s, 4096 bytes, %d on disk%s\n", segName(first), first, next, state, disk(t, file), checked)
			}
			if p == 0 {
				fmt.Fprintf(&want, "    group \"audit\": commit 1, lag 299\n")
				fmt.Fprintf(&want, "    group \"billing\": commit %d, lag %d\n", billingFirst, 300-billingFirst)
			} else {
				// The group's consumer committed its start in every
				// partition it was assigned.
				fmt.Fprintf(&want, "    group \"audit\": commit 0, lag 300\n")
				fmt.Fprintf(&want, "    group \"billing\": commit 300, lag 0\n")
			}
		}
		if command == "verify" {
			fmt.Fprintf(&want, "verify: 1 topic, 0 WALs, 0 source states; 600 records intact, 0 damaged; 0 WAL entries; 0 damage, 0 repairs: clean\n")
		} else {
			fmt.Fprintf(&want, "inspect: 1 topic, 0 WALs, 0 source states; 0 damage, 0 repairs: clean\n")
		}
		if out != want.String() {
			t.Fatalf("%s printed\n%s\nwant\n%s", command, out, want.String())
		}
	}
}

// TestVerifyTopicJSON: the same topic through -json, field by field.
func TestVerifyTopicJSON(t *testing.T) {
	dir := writeTopic(t, t.TempDir())
	r := report(t, "verify", dir, 0)
	if r.Command != "verify" || r.Dir != dir || r.Kind != "topic" || r.Status != "clean" || r.Error != "" || r.WAL != nil ||
		len(r.Pipelines) != 0 || len(r.Damage) != 0 || len(r.Repairs) != 0 {
		t.Fatalf("report %+v", r)
	}
	if want := (Totals{Topics: 1, Records: 600}); r.Totals != want {
		t.Fatalf("totals %+v, want %+v", r.Totals, want)
	}
	tp := r.Topic
	if tp.Dir != dir || tp.FormatVersion != 1 || tp.PartitionCount != 2 || tp.Codec != "json" || tp.ElementType != "string" || len(tp.Partitions) != 2 {
		t.Fatalf("topic %+v", tp)
	}
	p := tp.Partitions[0]
	if p.ID != 0 || p.Head != 0 || p.Tail != 300 || p.Checkpoint != 300 || !p.Clean || p.Records != 300 || len(p.Segments) != 3 {
		t.Fatalf("partition %+v", p)
	}
	file := filepath.Join(dir, "partition-00000", segName(perSegment))
	if want := (Segment{File: file, First: perSegment, Next: 2 * perSegment, Sealed: true, Size: 4096, Disk: disk(t, file),
		Records: perSegment, Damaged: 0, End: 32 + 32*perSegment}); p.Segments[1] != want {
		t.Fatalf("segment %+v, want %+v", p.Segments[1], want)
	}
	if fmt.Sprint(p.Groups) != "[{audit 1 299} {billing 120 180}]" {
		t.Fatalf("groups %v", p.Groups)
	}
}

// recordAt is the byte position of the record of offset off in the test
// topic's segment (records of 32 bytes after the 32-byte header).
func recordAt(off int64) int64 { return 32 + 32*(off%perSegment) }

func flipByte(t *testing.T, path string, at int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[at] ^= 0x5a
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyFlippedByte: a byte flipped in a record in the middle of a
// sealed segment, which inspect does not read (exit 0) and verify finds:
// exit 1, the damage named by file, byte and offset, every other record
// counted as intact, those after it too.
func TestVerifyFlippedByte(t *testing.T) {
	dir := writeTopic(t, t.TempDir())
	seg := filepath.Join(dir, "partition-00001", segName(perSegment))
	const off = perSegment + 40 // the 41st record of the second segment
	flipByte(t, seg, recordAt(off)+20)
	if r := report(t, "inspect", dir, 0); len(r.Damage) != 0 {
		t.Fatalf("inspect found %v; it reads no record below the producer checkpoint", r.Damage)
	}
	r := report(t, "verify", dir, 1)
	if r.Status != "damaged" || len(r.Damage) != 1 || len(r.Repairs) != 0 {
		t.Fatalf("report %+v", r)
	}
	d := r.Damage[0]
	if d.File != seg || d.Offset != recordAt(off) || d.Entry != 0 || !strings.HasPrefix(d.Reason, fmt.Sprintf("offset %d: crc32c ", off)) {
		t.Fatalf("damage %+v, want offset %d at byte %d of %s", d, off, recordAt(off), seg)
	}
	if r.Totals.Records != topicItems-1 || r.Totals.DamagedRecords != 1 || r.Totals.Damage != 1 {
		t.Fatalf("totals %+v", r.Totals)
	}
	s := r.Topic.Partitions[1].Segments[1]
	if s.Records != perSegment-1 || s.Damaged != 1 || s.End != 32+32*perSegment {
		t.Fatalf("segment %+v: the records after the damaged one must be counted", s)
	}
	// The human output names it the same way.
	code, out, _ := runCLI(t, "verify", dir)
	line := fmt.Sprintf("damage (1):\n  partition-00001/%s at byte %d: %s\n", segName(perSegment), recordAt(off), d.Reason)
	if code != 1 || !strings.Contains(out, line) ||
		!strings.HasSuffix(out, "verify: 1 topic, 0 WALs, 0 source states; 599 records intact, 1 damaged; 0 WAL entries; 1 damage, 0 repairs: damaged\n") {
		t.Fatalf("exit %d, printed\n%s\nwant the line\n%s", code, out, line)
	}
}

// TestVerifyTornTail: a record half written past the producer checkpoint,
// as a crash leaves it: the next open cuts it, so it is a repair, not
// damage (exit 0), named with its file, byte and offset.
func TestVerifyTornTail(t *testing.T) {
	dir := writeTopic(t, t.TempDir())
	seg := filepath.Join(dir, "partition-00000", segName(2*perSegment))
	at := recordAt(300)
	f, err := os.OpenFile(seg, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The first half of a record of offset 300: length, a crc, the offset.
	torn := binary.LittleEndian.AppendUint32(nil, 12)
	torn = binary.LittleEndian.AppendUint32(torn, 0xdeadbeef)
	torn = binary.LittleEndian.AppendUint64(torn, 300)
	if _, err := f.WriteAt(torn, at); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, command := range []string{"inspect", "verify"} {
		r := report(t, command, dir, 0)
		if r.Status != "clean" || len(r.Damage) != 0 || len(r.Repairs) != 1 || r.Topic.Partitions[0].Tail != 300 {
			t.Fatalf("%s: report %+v", command, r)
		}
		want := Repair{File: seg, Offset: at, What: "offset 300: a torn record at the end of the log (end marker 0x0, want 0xa4c4e52 (torn or overwritten record)), never acknowledged: Open cuts it"}
		if r.Repairs[0] != want {
			t.Fatalf("%s: repair %+v\nwant %+v", command, r.Repairs[0], want)
		}
	}
}

// TestVerifyCommitFile: a group's commit file missing or garbled is
// damage (the next open refuses: the commit cannot be rebuilt), exit 1,
// named by the file; the group's commit in the other partition is shown.
func TestVerifyCommitFile(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, path string)
		reason string
	}{
		{"missing", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, `missing: the commit of group "billing" is lost (restore the file, or delete the group to start it again)`},
		{"garbled", func(t *testing.T, path string) { flipByte(t, path, 20) }, "crc32c "},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := writeTopic(t, t.TempDir())
			path := filepath.Join(dir, "partition-00000", "offsets", "billing", "consumer.offset")
			c.damage(t, path)
			for _, command := range []string{"inspect", "verify"} {
				r := report(t, command, dir, 1)
				if len(r.Damage) != 1 || r.Damage[0].File != path || r.Damage[0].Offset != -1 || !strings.HasPrefix(r.Damage[0].Reason, c.reason) {
					t.Fatalf("%s: damage %+v, want %s naming %s", command, r.Damage, c.reason, path)
				}
				if g := r.Topic.Partitions[0].Groups; fmt.Sprint(g) != "[{audit 1 299}]" {
					t.Fatalf("%s: groups of partition 0 %v", command, g)
				}
				if g := r.Topic.Partitions[1].Groups; fmt.Sprint(g) != "[{audit 0 300} {billing 300 0}]" {
					t.Fatalf("%s: groups of partition 1 %v", command, g)
				}
			}
		})
	}
}

// TestUnreadable: no such directory, a file, a directory of no runnel
// kind, a bad command line: exit 2, the error naming the directory.
func TestUnreadable(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644)
	os.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o755)
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"verify", missing}, "runnel verify: stat " + missing + ": no such file or directory\n"},
		{[]string{"inspect", filepath.Join(dir, "notes.txt")}, "runnel inspect: not a runnel directory: " + filepath.Join(dir, "notes.txt") + " is a file\n"},
		{[]string{"verify", dir}, "runnel verify: not a runnel directory: " + dir + " is neither a topic directory (topic.meta, partition-NNNNN/), " +
			"a WAL directory (META, gen-{n}/) nor a data directory of pipeline.MMap ({pipeline}/ holding buffers or source states, {pipeline}.wal/)\n"},
		{[]string{"verify"}, "usage: runnel verify [-json] <dir>\n  -json\n    \twrite the report as JSON (the schema is in the command's doc)\n"},
		{[]string{"repair", dir}, "runnel: unknown command \"repair\"\n" + usage},
	} {
		code, out, errs := runCLI(t, c.args...)
		if code != 2 || out != "" || errs != c.stderr {
			t.Errorf("runnel %v: exit %d, stdout %q, stderr\n%q\nwant\n%q", c.args, code, out, errs, c.stderr)
		}
	}
	r := report(t, "verify", dir, 2)
	if r.Status != "unreadable" || r.Kind != "" || !strings.HasPrefix(r.Error, "not a runnel directory: "+dir) || r.Topic != nil {
		t.Fatalf("report %+v", r)
	}
}
