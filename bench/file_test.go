package bench

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/vertex/file"
)

// fileLine is the size of a line in the file sink benchmarks, newline
// included: a small log record.
const fileLine = 100

// BenchmarkFileSink writes b.N lines of 100 bytes in batches of 500,
// three ways in one run: the raw floor (one write and one fdatasync per
// batch to one file), vertex/file's Sink called directly (the same, plus
// its buffering, rotation every 64 MiB with a rename and two directory
// fsyncs), and a generator -> file sink pipeline on memory storage (the
// sink vertex's batches, acks and watermarks on top).
//
//	cd bench && go test -run '^$' -bench FileSink -benchtime 1000000x -count 5
func BenchmarkFileSink(b *testing.B) {
	line := make([]byte, fileLine-1)
	for i := range line {
		line[i] = 'a' + byte(i%26)
	}
	b.Run("write+fdatasync", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, 0, fileLine*defaultBatchSize)
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i += defaultBatchSize {
			buf = buf[:0]
			for range min(defaultBatchSize, b.N-i) {
				buf = append(append(buf, line...), '\n')
			}
			if _, err := f.Write(buf); err != nil {
				b.Fatal(err)
			}
			if err := unix.Fdatasync(int(f.Fd())); err != nil {
				b.Fatal(err)
			}
		}
		report(b, start)
	})
	b.Run("sink", func(b *testing.B) {
		sink := file.NewSink(b.TempDir())
		defer sink.Close()
		msgs := make([]vertex.Message[[]byte], defaultBatchSize)
		for i := range msgs {
			msgs[i] = vertex.Message[[]byte]{ID: strconv.Itoa(i), Value: line}
		}
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i += defaultBatchSize {
			if _, err := sink.Write(context.Background(), msgs[:min(defaultBatchSize, b.N-i)]); err != nil {
				b.Fatal(err)
			}
		}
		report(b, start)
	})
	b.Run("pipeline", func(b *testing.B) {
		p := pipeline.New("files")
		gen := pipeline.Source(p, "gen", vertex.Generator(func(int64) []byte { return line }).WithCount(int64(b.N)))
		pipeline.Sink(p, "out", gen, file.NewSink(b.TempDir()))
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		if err := p.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		report(b, start)
	})
}
