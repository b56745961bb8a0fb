package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runnel-dev/runnel/internal/envelope"
	"github.com/runnel-dev/runnel/isb/codec"
	"github.com/runnel-dev/runnel/isb/mmap"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// defaultBatchSize is a vertex's default BatchSize.
const defaultBatchSize = 500

// defaultCommitInterval is the pipeline's default CommitInterval: how
// often durable storage persists commits, which the interval flush of the
// mmap-interval runs matches.
const defaultCommitInterval = 20 * time.Millisecond

// BenchmarkDurable runs generator -> map(identity) -> sink(blackhole) on
// memory storage and on mmap storage (each message encoded as an envelope,
// written and flushed to two buffers, every commit a checkpoint), beside
// the raw cost of writing the same bytes: one write+fdatasync per batch of
// the pipeline's batch size, one after the other. Under Immediate the
// source and the map keep writes staged while earlier ones flush
// (isb.StagedLog), so the pipeline is not bounded by that serial floor.
//
//	cd bench && go test -run '^$' -bench Durable -benchtime 1000000x -count 5
func BenchmarkDurable(b *testing.B) {
	rawInt64, err := codec.Raw[int64]()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("memory", func(b *testing.B) { benchRunnel(b) })
	b.Run("mmap-immediate", func(b *testing.B) {
		benchRunnel(b, pipeline.WithStorage(pipeline.MMap(b.TempDir())), pipeline.WithCodec(rawInt64))
	})
	// The map writes each of its Concurrency (4) chunks of a batch on its
	// own, each a flush under Immediate: one chunk per batch shows the cost.
	b.Run("mmap-immediate-conc1", func(b *testing.B) {
		benchRunnelMap(b, "bench", []vertex.Option{vertex.Concurrency(1)}, pipeline.WithStorage(pipeline.MMap(b.TempDir())), pipeline.WithCodec(rawInt64))
	})
	// The map holds MaxInFlight (default 4 batches) messages from its read
	// to its ack, which on durable storage comes after the flush of its
	// outputs: twice the in-flight bound shows how much of the flush
	// latency that bound leaves uncovered.
	b.Run("mmap-immediate-inflight8x", func(b *testing.B) {
		benchRunnelMap(b, "bench", []vertex.Option{vertex.MaxInFlight(8 * defaultBatchSize)}, pipeline.WithStorage(pipeline.MMap(b.TempDir())), pipeline.WithCodec(rawInt64))
	})
	// Commits are persisted every defaultCommitInterval (20 ms): a
	// checkpoint with two fsyncs per buffer, which share the disk with
	// the data flushes. A longer interval trades them for more duplicates
	// after a crash (pipeline.CommitInterval).
	b.Run("mmap-immediate-commit100ms", func(b *testing.B) {
		benchRunnel(b, pipeline.WithStorage(pipeline.MMap(b.TempDir())), pipeline.WithCodec(rawInt64), pipeline.CommitInterval(100*time.Millisecond))
	})
	b.Run("mmap-batch", func(b *testing.B) {
		benchRunnel(b, pipeline.WithStorage(pipeline.MMap(b.TempDir(), mmap.Flush(mmap.Batch(defaultBatchSize)))), pipeline.WithCodec(rawInt64))
	})
	b.Run("mmap-interval", func(b *testing.B) {
		benchRunnel(b, pipeline.WithStorage(pipeline.MMap(b.TempDir(), mmap.Flush(mmap.Interval(defaultCommitInterval)))), pipeline.WithCodec(rawInt64))
	})
	// The envelope of a generator message: ID, event time, an 8-byte value
	// (about 30 bytes) in a 20-byte record frame.
	env := envelope.Codec(rawInt64)
	rec, _ := env.Append(nil, vertex.Message[int64]{ID: "123456", EventTime: time.Now(), Value: 123456})
	recSize := len(rec) + 20
	b.Run("write+fdatasync", func(b *testing.B) {
		rawWrite(b, recSize, defaultBatchSize)
	})
}

// rawWrite writes b.N records of size bytes in batches of batch, with one
// write and one fdatasync per batch, twice (the pipeline writes every
// message to two buffers).
func rawWrite(b *testing.B, size, batch int) {
	f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, size*batch)
	b.ResetTimer()
	start := time.Now()
	for range 2 {
		for i := 0; i < b.N; i += batch {
			n := min(batch, b.N-i)
			if _, err := f.Write(buf[:n*size]); err != nil {
				b.Fatal(err)
			}
			if err := unix.Fdatasync(int(f.Fd())); err != nil {
				b.Fatal(err)
			}
		}
	}
	report(b, start)
}

// benchRunnelMap runs generator -> map(identity) -> sink(blackhole) for
// b.N messages in a runnel pipeline named name with opts, the map with
// mapOpts (a name of its own per run keeps storage that outlives the run,
// JetStream, from resuming an earlier one).
func benchRunnelMap(b *testing.B, name string, mapOpts []vertex.Option, opts ...pipeline.Option) {
	benchRunnelWatched(b, name, mapOpts, nil, opts...)
}

// benchRunnelWatched is benchRunnelMap with watch(p) called before the
// run starts; the function it returns is called once the run ended.
func benchRunnelWatched(b *testing.B, name string, mapOpts []vertex.Option, watch func(*pipeline.Pipeline) func(), opts ...pipeline.Option) {
	p := pipeline.New(name, opts...)
	gen := pipeline.Source(p, "gen", vertex.Generator(func(i int64) int64 { return i }).WithCount(int64(b.N)))
	mapped := pipeline.Map(p, "identity", gen, identity, mapOpts...)
	sink := vertex.Blackhole[int64]()
	pipeline.Sink(p, "sink", mapped, sink)
	b.ReportAllocs()
	unwatch := func() {}
	if watch != nil {
		unwatch = watch(p)
	}
	b.ResetTimer()
	start := time.Now()
	if err := p.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	report(b, start)
	b.StopTimer()
	unwatch()
	if sink.Count() != int64(b.N) {
		b.Fatalf("sink got %d, want %d", sink.Count(), b.N)
	}
}
