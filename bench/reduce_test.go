package bench

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tidwall "github.com/tidwall/wal"

	"github.com/runnel-dev/runnel/isb/mmap"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/wal"
)

// reduceKeys is the key count of the reduce benchmark.
const reduceKeys = 10_000

// keyedGenerator generates n messages over keys keys, one microsecond of
// event time apart: a one-second window holds a million messages, about
// 100 per key at reduceKeys.
func keyedGenerator(n, keys int) *vertex.GeneratorSource[int64] {
	base := time.Unix(1_800_000_000, 0)
	return vertex.Generator(func(i int64) int64 { return i }).WithCount(int64(n)).WithKeys(keys).
		WithEventTime(func(i int64) time.Time { return base.Add(time.Duration(i) * time.Microsecond) })
}

// BenchmarkReduce runs a keyed generator -> fixed-window count -> sink
// beside the map pipeline of the same shape (keyed generator -> identity
// map -> sink), both with watermarks on and default vertex options. msg/s
// counts the messages generated. Beside them, raw tidwall/wal appends of
// entries of the reduce WAL's size, one WriteBatch and fsync per batch of
// the vertex batch size: what the log's disk writes alone cost.
//
//	cd bench && go test -run '^$' -bench 'BenchmarkReduce' -benchtime 300000x -count 3
func BenchmarkReduce(b *testing.B) {
	b.Run("map", func(b *testing.B) { benchKeyedMap(b) })
	// The map on durable storage: what the mmap buffers alone cost, the
	// baseline of reduce-durable.
	b.Run("map-durable", func(b *testing.B) { benchKeyedMap(b, pipeline.WithStorage(pipeline.MMap(b.TempDir()))) })
	b.Run("map-durable-interval", func(b *testing.B) {
		benchKeyedMap(b, pipeline.WithStorage(pipeline.MMap(b.TempDir(), mmap.Flush(mmap.Interval(defaultCommitInterval)))))
	})
	b.Run("reduce", func(b *testing.B) { benchReduce(b, reduceKeys, nil) })
	// The same count written by hand (handwritten_test.go): the floor.
	b.Run("handwritten", func(b *testing.B) { benchHandwrittenCount(b, reduceKeys) })
	// The same reduce on durable storage: mmap buffers and the reduce WAL
	// (each message appended, group-committed with one fsync, before it is
	// acked; see forwarder.ReduceLog).
	b.Run("reduce-durable", func(b *testing.B) { benchReduce(b, reduceKeys, pipeline.WithStorage(pipeline.MMap(b.TempDir()))) })
	// One replica reading 4 partitions: one WAL on a log per replica, four
	// on a log per partition (the layout's worst case: 4 fsyncs per group
	// commit instead of 1).
	b.Run("reduce-durable-4-partitions", func(b *testing.B) {
		benchReduce(b, reduceKeys, pipeline.WithStorage(pipeline.MMap(b.TempDir())), vertex.Partitions(4))
	})
	// The same with the buffers flushed every commit interval instead of
	// at once (mmap.Interval): the serial source's Immediate flush is no
	// longer the bound, what is left is the reduce and its WAL.
	b.Run("reduce-durable-interval", func(b *testing.B) {
		benchReduce(b, reduceKeys, pipeline.WithStorage(pipeline.MMap(b.TempDir(), mmap.Flush(mmap.Interval(defaultCommitInterval)))))
	})
	b.Run(fmt.Sprintf("tidwall/batch=%d", defaultBatchSize), func(b *testing.B) {
		rawTidwall(b, reduceEntrySize(b), defaultBatchSize)
	})
}

// reduceEntrySize is the bytes the reduce WAL writes for one message of
// the benchmark (frame, header, partition, offset, event time, ID, key, window
// and the JSON value), measured by appending one to a WAL.
func reduceEntrySize(b *testing.B) int {
	w, err := wal.Open(b.TempDir(), wal.CompactEvery(0))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	before := w.Stats().LogBytes
	start := time.Unix(1_800_000_000, 0)
	e := wal.Entry{Partition: 0, Offset: 123456, EventTime: start.Add(123456 * time.Microsecond), ID: "123456",
		Keys: []string{"key-1234"}, Windows: []wal.Window{{Start: start, End: start.Add(time.Second)}},
		Value: []byte("123456")}
	if err := w.Append(context.Background(), e); err != nil {
		b.Fatal(err)
	}
	return int(w.Stats().LogBytes - before)
}

// rawTidwall writes b.N entries of size bytes (frame included) to a
// tidwall/wal log with the WAL's segment size, in batches of batch, one
// WriteBatch (one write and one fsync) per batch.
func rawTidwall(b *testing.B, size, batch int) {
	l, err := tidwall.Open(b.TempDir(), &tidwall.Options{SegmentSize: wal.DefaultSegmentSize})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	data := []byte(strings.Repeat("e", size-1)) // a one-byte uvarint frame
	var tb tidwall.Batch
	index := uint64(0)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for n := b.N; n > 0; n -= batch {
		for range min(n, batch) {
			index++
			tb.Write(index, data)
		}
		if err := l.WriteBatch(&tb); err != nil {
			b.Fatal(err)
		}
	}
	report(b, start)
}

// benchKeyedMap runs keyed generator -> identity map -> sink on b.N
// messages.
func benchKeyedMap(b *testing.B, opts ...pipeline.Option) {
	p := pipeline.New("bench-map", opts...)
	gen := pipeline.Source(p, "gen", keyedGenerator(b.N, reduceKeys))
	mapped := pipeline.Map(p, "identity", gen, identity)
	sink := vertex.Blackhole[int64]()
	pipeline.Sink(p, "sink", mapped, sink)
	runMeasured(b, p)
	if sink.Count() != int64(b.N) {
		b.Fatalf("sink got %d, want %d", sink.Count(), b.N)
	}
}

// benchReduce runs keyed generator -> fixed-window count -> sink on b.N
// messages over keys keys and checks the counts add up to b.N.
func benchReduce(b *testing.B, keys int, opt pipeline.Option, vopts ...vertex.Option) {
	var opts []pipeline.Option
	if opt != nil {
		opts = append(opts, opt)
	}
	p := pipeline.New("bench-reduce", opts...)
	gen := pipeline.Source(p, "gen", keyedGenerator(b.N, keys))
	counts, _ := pipeline.Reduce(p, "count", gen, vertex.Fixed(time.Second), vertex.Counting[int64](), vopts...)
	var total, results atomic.Int64
	pipeline.Sink(p, "sink", counts, vertex.Func(func(_ context.Context, ms []vertex.Message[vertex.Windowed[int64]]) error {
		for _, m := range ms {
			total.Add(m.Value.Value)
		}
		results.Add(int64(len(ms)))
		return nil
	}))
	runMeasured(b, p)
	if total.Load() != int64(b.N) {
		b.Fatalf("the counts add up to %d, want %d", total.Load(), b.N)
	}
	b.ReportMetric(float64(results.Load())/float64(b.N), "results/msg")
}

// runMeasured runs p as the measured part of b and reports its msg/s.
func runMeasured(b *testing.B, p *pipeline.Pipeline) {
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	if err := p.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	report(b, start)
}
