package file_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/vertex/file"
)

// writeIDs writes the lines "id-{i}" for i in [from, to) to path.
func writeIDs(t *testing.T, path string, from, to int) {
	t.Helper()
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "id-%d\n", i)
	}
	write(t, path, b.String())
}

// outputCounts counts the ids of the lines in the final files of dir
// (part-*.txt): each line is "ID-{i}" (the pipeline's map made it);
// another line fails the test. It returns the counts and the lines per
// file.
func outputCounts(t *testing.T, dir string) (map[int]int, []int) {
	t.Helper()
	counts, perFile, torn := countLines(t, dir, "part-*.txt")
	if torn > 0 {
		t.Fatalf("%d final files of %s end in a torn line", torn, dir)
	}
	return counts, perFile
}

// countLines counts the ids of the lines in the files of dir that match
// pattern, and the files whose last line has no newline (torn by a kill).
func countLines(t *testing.T, dir, pattern string) (counts map[int]int, perFile []int, torn int) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		t.Fatal(err)
	}
	counts = map[int]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for l := range bytes.Lines(b) {
			if !bytes.HasSuffix(l, []byte("\n")) {
				torn++
				break
			}
			id, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSuffix(string(l), "\n"), "ID-"))
			if err != nil || !bytes.HasPrefix(l, []byte("ID-")) {
				t.Fatalf("%s: line %q is not one the pipeline wrote", f, l)
			}
			counts[id]++
			n++
		}
		perFile = append(perFile, n)
	}
	return counts, perFile, torn
}

// runFiles runs file source -> upper-case map -> file sink, from the
// *.log files of in to out, on storage, until the source ends.
func runFiles(t *testing.T, in, out string, storage pipeline.Storage) {
	t.Helper()
	p := pipeline.New("files", pipeline.WithStorage(storage))
	lines := pipeline.Source(p, "lines", file.NewSource(filepath.Join(in, "*.log")), vertex.BatchSize(100))
	upper := pipeline.Map(p, "upper", lines, func(_ context.Context, v []byte) ([]byte, error) {
		return bytes.ToUpper(v), nil
	}, vertex.Replicas(2))
	pipeline.Sink(p, "out", upper, file.NewSink(out, file.RotateLines(1000)), vertex.BatchSize(64))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
}

// checkExactlyOnce requires every id of [0, total) exactly once in out,
// and files of 1000 lines but the last of each run.
func checkExactlyOnce(t *testing.T, out string, total int) {
	t.Helper()
	counts, perFile := outputCounts(t, out)
	for id := range total {
		if counts[id] != 1 {
			t.Fatalf("id %d reached the output %d times, want once", id, counts[id])
		}
	}
	if len(counts) != total {
		t.Fatalf("the output holds %d ids, want %d", len(counts), total)
	}
	if left, err := filepath.Glob(filepath.Join(out, "*.open")); err != nil || len(left) > 0 {
		t.Fatalf("files left open after the run: %v %v", left, err)
	}
	t.Logf("%d ids once each, in %d files of %v lines", total, len(perFile), perFile)
}

// TestPipelineFileToFile: three files through a map into rotated files,
// on memory storage: every line once, in files of 1000 lines.
func TestPipelineFileToFile(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	writeIDs(t, filepath.Join(in, "a.log"), 0, 2500)
	writeIDs(t, filepath.Join(in, "b.log"), 2500, 5000)
	writeIDs(t, filepath.Join(in, "c.log"), 5000, 7500)
	runFiles(t, in, out, pipeline.Memory())
	checkExactlyOnce(t, out, 7500)
	if _, perFile := outputCounts(t, out); !slices.Equal(perFile, []int{1000, 1000, 1000, 1000, 1000, 1000, 1000, 500}) {
		t.Fatalf("lines per file %v, want 7 of 1000 and one of 500", perFile)
	}
}

// TestPipelineFileResumesOnDurableStorage: on mmap storage a second run
// reads nothing the first acknowledged, and a third only what was added
// since: every id once over the three runs.
func TestPipelineFileResumesOnDurableStorage(t *testing.T) {
	dir := t.TempDir()
	in, out, data := filepath.Join(dir, "in"), filepath.Join(dir, "out"), filepath.Join(dir, "data")
	writeIDs(t, filepath.Join(in, "a.log"), 0, 3000)
	runFiles(t, in, out, pipeline.MMap(data))
	checkExactlyOnce(t, out, 3000)

	runFiles(t, in, out, pipeline.MMap(data))
	checkExactlyOnce(t, out, 3000)

	f, err := os.OpenFile(filepath.Join(in, "a.log"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 3000; i < 3500; i++ {
		fmt.Fprintf(f, "id-%d\n", i)
	}
	f.Close()
	writeIDs(t, filepath.Join(in, "b.log"), 3500, 4200)
	runFiles(t, in, out, pipeline.MMap(data))
	checkExactlyOnce(t, out, 4200)
}
