package mmap

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// treeDigest hashes the names, sizes and contents of every file under dir,
// so a test can tell that Inspect changed nothing.
func treeDigest(t testing.TB, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v\n", path, d.Type())
		if d.Type().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// checkInspect runs Inspect and Verify on the damaged topic of a row of
// the damage table before Open sees it, and checks that they say what Open
// then does: a refusal is damage naming the same file; otherwise the same
// tail and commit, and (Verify) exactly the lost offsets counted as
// damaged, every other one as an intact record, a torn tail as a repair.
// Neither may change a byte.
func checkInspect(t *testing.T, root string, want outcome) {
	t.Helper()
	dir := filepath.Join(root, testTopic)
	before := treeDigest(t, dir)
	for _, full := range []bool{false, true} {
		info, err := inspect(dir, full)
		if err != nil {
			t.Fatalf("inspect (full %v): %v", full, err)
		}
		if treeDigest(t, dir) != before {
			t.Fatalf("inspect (full %v) changed the directory", full)
		}
		if want.openErr != "" {
			if !slices.ContainsFunc(info.Damage, func(ce *CorruptError) bool { return filepath.Base(ce.File) == want.openErr }) {
				t.Fatalf("inspect (full %v): Open refuses %s, damage found %v", full, want.openErr, info.Damage)
			}
			continue
		}
		if len(info.Partitions) != 1 {
			t.Fatalf("inspect: %d partitions", len(info.Partitions))
		}
		p := info.Partitions[0]
		commit := want.commit
		if commit == 0 {
			commit = damageCommit
		}
		if p.Head != 0 || p.Tail != want.tail || !slices.Equal(p.Groups, []GroupInfo{{"g", commit, want.tail - commit}}) {
			t.Fatalf("inspect (full %v): [%d, %d) groups %v; want [0, %d) with g at %d", full, p.Head, p.Tail, p.Groups, want.tail, commit)
		}
		for _, ce := range info.Damage {
			if filepath.Base(ce.File) != want.lostIn {
				t.Fatalf("inspect (full %v): damage %v, want it in %s", full, ce, want.lostIn)
			}
		}
		torn := slices.ContainsFunc(info.Repairs, func(r Repair) bool { return strings.Contains(r.What, "torn record") })
		if wantTorn := want.tail < damageItems; torn != wantTorn {
			t.Fatalf("inspect (full %v): torn tail repair %v, want %v: %v", full, torn, wantTorn, info.Repairs)
		}
		if !full {
			continue
		}
		var records, damaged int64
		for _, s := range p.Segments {
			records += s.Records
			damaged += s.Damaged
		}
		if damaged != int64(len(want.lost)) || records != want.tail-damaged || (len(info.Damage) > 0) != (len(want.lost) > 0) {
			t.Fatalf("verify: %d records, %d damaged in %v; want %d lost of %d", records, damaged, info.Damage, len(want.lost), want.tail)
		}
	}
}

// TestInspectTopic: a clean topic of 2 partitions, read exactly: the meta,
// every segment's offset range, the groups' commits and lags, and Verify's
// counts; nothing is damaged or to repair.
func TestInspectTopic(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, 2)
	appendItems(t, b.Partition(0), 0, 300, 50)
	appendItems(t, b.Partition(1), 0, 7, 7)
	if err := b.Partition(0).Commit(bg, "g/1", 120); err != nil {
		t.Fatal(err)
	}
	if err := b.Partition(1).Commit(bg, "g/1", 7); err != nil {
		t.Fatal(err)
	}
	if err := b.Partition(0).Commit(bg, "h", 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	topic := filepath.Join(dir, testTopic)
	for _, full := range []bool{false, true} {
		info, err := inspect(topic, full)
		if err != nil {
			t.Fatal(err)
		}
		if info.FormatVersion != 1 || info.PartitionCount != 2 || info.Codec != "json" || info.ElementType != "string" ||
			len(info.Damage) != 0 || len(info.Repairs) != 0 || info.Verified != full || len(info.Partitions) != 2 {
			t.Fatalf("topic %+v", info)
		}
		for _, p := range info.Partitions {
			recs := partitionRecords(t, dir, p.ID)
			tail := int64(len(recs))
			if p.Head != 0 || p.Tail != tail || p.Checkpoint != tail || !p.Clean {
				t.Fatalf("partition %d: head %d tail %d checkpoint %d clean %v; want [0, %d) closed cleanly", p.ID, p.Head, p.Tail, p.Checkpoint, p.Clean, tail)
			}
			files := segFiles(t, dir, p.ID)
			if len(p.Segments) != len(files) {
				t.Fatalf("partition %d: %d segments, want %d", p.ID, len(p.Segments), len(files))
			}
			for i, s := range p.Segments {
				var in []placedRecord
				for _, r := range recs {
					if r.file == filepath.Base(files[i]) {
						in = append(in, r)
					}
				}
				fi, err := os.Stat(files[i])
				if err != nil {
					t.Fatal(err)
				}
				want := SegmentInfo{File: files[i], First: in[0].offset, Next: in[len(in)-1].offset + 1, Sealed: i < len(files)-1,
					Size: MinSegmentSize, Disk: allocated(fi), Records: -1, Damaged: -1, End: -1}
				if full {
					want.Records, want.Damaged, want.End = int64(len(in)), 0, in[len(in)-1].to
				}
				if s != want {
					t.Fatalf("partition %d segment %d: %+v\nwant %+v", p.ID, i, s, want)
				}
			}
			wantGroups := map[int][]GroupInfo{0: {{"g/1", 120, 180}, {"h", 0, 300}}, 1: {{"g/1", 7, 0}}}[p.ID]
			if !slices.Equal(p.Groups, wantGroups) {
				t.Fatalf("partition %d groups %v, want %v", p.ID, p.Groups, wantGroups)
			}
		}
		if got := info.Partitions[0].Segments; len(got) < 3 {
			t.Fatalf("partition 0 has %d segments; the test wants several", len(got))
		}
	}
}

// TestInspectNotATopic: a missing directory is the file system's error, an
// empty one or a file ErrNotTopic.
func TestInspectNotATopic(t *testing.T) {
	dir := t.TempDir()
	if _, err := Inspect(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing directory: %v", err)
	}
	if _, err := Verify(dir); !errors.Is(err, ErrNotTopic) || err.Error() != "mmap: not a topic directory: "+dir+" holds neither topic.meta nor a partition directory" {
		t.Fatalf("empty directory: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
	if _, err := Inspect(filepath.Join(dir, "f")); err == nil {
		t.Fatal("a file inspected as a topic")
	}
}

// TestInspectLeftovers: what a crash leaves for Open to repair is listed
// as a repair, not as damage: temporary files, a producer checkpoint
// missing, a missing partition.
func TestInspectLeftovers(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, 2)
	appendItems(t, b.Partition(0), 0, 100, 10)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	topic := filepath.Join(dir, testTopic)
	for _, f := range []string{file(dir, producerFile+tmpSuffix), file(dir, filepath.Join(offsetsDir, groupTmpPrefix+"x"))} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(partDir(dir, 1)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(file(dir, producerFile)); err != nil {
		t.Fatal(err)
	}
	info, err := Verify(topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Damage) != 0 || len(info.Partitions) != 1 || info.Partitions[0].Tail != 100 || info.Partitions[0].Checkpoint != -1 {
		t.Fatalf("damage %v, partitions %+v", info.Damage, info.Partitions)
	}
	var got []string
	for _, r := range info.Repairs {
		got = append(got, fmt.Sprintf("%s@%d: %s", strings.TrimPrefix(r.File, topic+"/"), r.Offset, r.What))
	}
	segs := segFiles(t, dir, 0)
	want := []string{
		"partition-00001@-1: missing: Open creates the partition empty",
		"partition-00000/producer.offset.tmp@-1: a temporary file of an interrupted write: Open removes it",
		"partition-00000/offsets/.tmp-x@-1: left by a commit or a group deletion that a crash interrupted: Open removes it",
		"partition-00000/producer.offset@-1: open " + file(dir, producerFile) + ": no such file or directory: Open rebuilds it by scanning " +
			filepath.Base(segs[len(segs)-1]) + " from its start",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("repairs\n%q\nwant\n%q", got, want)
	}
}
