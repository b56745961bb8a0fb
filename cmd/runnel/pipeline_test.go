package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/envelope"
	"github.com/runnel-dev/runnel/isb/codec"
	"github.com/runnel-dev/runnel/isb/mmap"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/wal"
)

var pipeBase = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

const pipeN = 500

// runPipeline runs a small durable pipeline to its end on
// pipeline.MMap(dir): a resumable generator of pipeN messages with 3 keys,
// 10 ms apart in event time, a map, a keyed count in 1 s fixed windows
// over 2 partitions, a sink.
func runPipeline(t *testing.T, dir string) {
	t.Helper()
	p := pipeline.New("shop", pipeline.WithStorage(pipeline.MMap(dir)))
	gen := pipeline.Source(p, "gen", vertex.Generator(func(i int64) int64 { return i }).WithCount(pipeN).WithKeys(3).
		WithEventTime(func(i int64) time.Time { return pipeBase.Add(time.Duration(i) * 10 * time.Millisecond) }))
	passed := pipeline.Map(p, "pass", gen, func(_ context.Context, v int64) (int64, error) { return v, nil })
	counts, _ := pipeline.Reduce(p, "count", passed, vertex.Fixed(time.Second), vertex.Counting[int64](), vertex.Partitions(2))
	pipeline.Sink(p, "out", counts, vertex.Blackhole[vertex.Windowed[int64]]())
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// openBuffer opens a buffer of the pipeline as the pipeline does (the
// envelope around JSON values), the independent reading the report is
// checked against. A cleanly closed topic opens without a write.
func openBuffer[T any](t *testing.T, dir, vertexName string) mmap.TopicInfo {
	t.Helper()
	b, err := mmap.New[vertex.Message[T]](filepath.Join(dir, "shop"), mmap.WithCodec(envelope.Codec(codec.JSON[T]())))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var info mmap.TopicInfo
	n := map[string]int{"pass": 1, "count": 2, "out": 1}[vertexName]
	if _, err := b.Open(vertexName, n); err != nil {
		t.Fatal(err)
	}
	groups, err := b.Groups()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		l := b.Partition(i)
		p := mmap.PartitionInfo{ID: i, Head: l.Head(), Tail: l.Tail()}
		for _, g := range groups {
			c, ok, err := l.Committed(g)
			if err != nil || !ok {
				t.Fatalf("committed %s: %v, %v", g, ok, err)
			}
			p.Groups = append(p.Groups, mmap.GroupInfo{Name: g, Commit: c, Lag: l.Tail() - c})
		}
		info.Partitions = append(info.Partitions, p)
	}
	return info
}

// TestInspectPipeline: the data directory of a durable pipeline that ran to
// its end, against what opening its buffers and logs says.
func TestInspectPipeline(t *testing.T) {
	dir := t.TempDir()
	runPipeline(t, dir)
	for _, command := range []string{"inspect", "verify"} {
		r := report(t, command, dir, 0)
		if r.Kind != "data" || r.Status != "clean" || len(r.Damage) != 0 || len(r.Repairs) != 0 || len(r.Pipelines) != 1 {
			t.Fatalf("%s: report %+v", command, r)
		}
		pl := r.Pipelines[0]
		if pl.Name != "shop" || len(pl.Buffers) != 3 || len(pl.SourceStates) != 1 || len(pl.Reduces) != 1 {
			t.Fatalf("%s: pipeline %+v", command, pl)
		}
		var records int64
		for i, v := range []string{"count", "out", "pass"} {
			b := pl.Buffers[i]
			var want mmap.TopicInfo
			switch v {
			case "out":
				want = openBuffer[vertex.Windowed[int64]](t, dir, v)
			default:
				want = openBuffer[int64](t, dir, v)
			}
			if b.Vertex != v || b.Topic.Dir != filepath.Join(dir, "shop", v) || b.Topic.Codec != "envelope1+json" || len(b.Topic.Partitions) != len(want.Partitions) {
				t.Fatalf("%s: buffer %d: %+v", command, i, b)
			}
			for j, p := range b.Topic.Partitions {
				w := want.Partitions[j]
				if p.Head != w.Head || p.Tail != w.Tail || p.Checkpoint != w.Tail || !p.Clean || fmt.Sprint(p.Groups) != fmt.Sprint(w.Groups) {
					t.Fatalf("%s: buffer %s partition %d: %+v; opening it says %+v", command, v, j, p, w)
				}
				if len(p.Groups) != 1 || p.Groups[0].Name != v || p.Groups[0].Lag != 0 {
					t.Fatalf("%s: buffer %s partition %d groups %v: its vertex consumed all of it", command, v, j, p.Groups)
				}
				records += p.Tail - p.Head
			}
		}
		st := pl.SourceStates[0]
		if st.Vertex != "gen" || st.File != filepath.Join(dir, "shop", "gen.source") || st.Version != 2 || st.StateBytes != 8 ||
			len(st.Anchors) != 1 || len(st.Anchors["pass"]) != 1 {
			t.Fatalf("%s: source state %+v", command, st)
		}
		rd := pl.Reduces[0]
		if rd.Vertex != "count" || rd.Dir != filepath.Join(dir, "shop.wal", "count") || len(rd.Logs) != 2 {
			t.Fatalf("%s: reduce %+v", command, rd)
		}
		messages, entries := 0, 0
		for p, l := range rd.Logs {
			w := l.WAL
			if l.Name != fmt.Sprintf("partition-%d", p) || w.Metadata["partition"] != fmt.Sprint(p) || w.Metadata["window.kind"] != "fixed" ||
				w.Metadata["window.length"] != "1s" || w.OpenMessages != 0 || len(w.OpenWindows) != 0 || !w.Clean || w.ClosedAt != uint64(w.Entries) {
				t.Fatalf("%s: log %d: %+v", command, p, l)
			}
			if command == "verify" {
				// Opening the log agrees. It compacts the closed windows
				// away, so it comes last.
				lw, err := wal.Open(w.Dir)
				if err != nil {
					t.Fatal(err)
				}
				rec := lw.Recovered()
				lw.Close()
				if rec.Entries != w.OpenMessages || !maps.Equal(rec.LastOffsets, w.LastOffsets) || w.Watermark == nil || !rec.Watermark.Equal(*w.Watermark) {
					t.Fatalf("%s: log %d: %+v; opening it says %+v", command, p, w, rec)
				}
			}
			messages += w.Messages
			entries += w.Entries
		}
		// Every message logged once: no crash, no redelivery.
		if messages != pipeN {
			t.Fatalf("%s: the logs hold %d messages, want %d", command, messages, pipeN)
		}
		want := Totals{Topics: 3, WALs: 2, SourceStates: 1, WALEntries: entries, Records: -1, DamagedRecords: -1}
		if command == "verify" {
			want.Records, want.DamagedRecords = records, 0
		}
		if r.Totals != want {
			t.Fatalf("%s: totals %+v, want %+v", command, r.Totals, want)
		}
	}
}

// walFrame returns the byte position of entry index's frame in a WAL
// segment that starts at entry 1 (tidwall/wal's frames: a uvarint length,
// then the entry).
func walFrame(t *testing.T, seg []byte, index int) int {
	t.Helper()
	p := 0
	for range index - 1 {
		n, k := binary.Uvarint(seg[p:])
		if k <= 0 {
			t.Fatalf("no frame at byte %d", p)
		}
		p += k + int(n)
	}
	return p
}

// TestVerifyDamagedPipeline: a WAL entry of a reduce log and the source
// state damaged in a pipeline's directory: exit 1, each damage named by
// file, byte (and WAL entry), the entries after the damaged one counted.
func TestVerifyDamagedPipeline(t *testing.T) {
	dir := t.TempDir()
	runPipeline(t, dir)
	clean := report(t, "verify", dir, 0)
	seg := filepath.Join(dir, "shop.wal", "count", "partition-0", "gen-00000000000000000001", "00000000000000000001")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	at := walFrame(t, b, 100)
	flipByte(t, seg, int64(at)+20)
	state := filepath.Join(dir, "shop", "gen.source")
	flipByte(t, state, 20)

	r := report(t, "verify", dir, 1)
	if r.Status != "damaged" || len(r.Damage) != 2 || len(r.Repairs) != 0 {
		t.Fatalf("report %+v", r)
	}
	if d := r.Damage[0]; d.File != state || d.Offset != 12 || !strings.HasPrefix(d.Reason, "checksum ") {
		t.Fatalf("damage %+v, want the checksum of %s", d, state)
	}
	if d := r.Damage[1]; d.File != seg || d.Entry != 100 || d.Offset != int64(at) || !strings.HasPrefix(d.Reason, "damaged entry: crc32c ") {
		t.Fatalf("damage %+v, want entry 100 of %s at byte %d", d, seg, at)
	}
	if got, want := r.Totals.WALEntries, clean.Totals.WALEntries-1; got != want {
		t.Fatalf("%d WAL entries intact, want %d: every entry but the damaged one", got, want)
	}
	log := r.Pipelines[0].Reduces[0].Logs[0].WAL
	if w := clean.Pipelines[0].Reduces[0].Logs[0].WAL; log.Messages != w.Messages-1 || log.Segments[0].Entries != w.Segments[0].Entries-1 {
		t.Fatalf("log %+v after the damage; before %+v", log, w)
	}
	if st := r.Pipelines[0].SourceStates[0]; st.Version != 0 || st.File != state {
		t.Fatalf("damaged source state %+v", st)
	}
	code, out, _ := runCLI(t, "verify", dir)
	for _, line := range []string{
		"  source state gen (shop/gen.source): damaged\n",
		fmt.Sprintf("  shop/gen.source at byte 12: %s\n", r.Damage[0].Reason),
		fmt.Sprintf("  shop.wal/count/partition-0/gen-00000000000000000001/00000000000000000001 entry 100 at byte %d: %s\n", at, r.Damage[1].Reason),
	} {
		if code != 1 || !strings.Contains(out, line) {
			t.Fatalf("exit %d, printed\n%s\nwant the line\n%s", code, out, line)
		}
	}
}
