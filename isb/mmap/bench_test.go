package mmap

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/fsutil"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/codec"
)

// Benchmarks of 100-byte records (raw codec, so the payload is exactly 100
// bytes and the record 120), each interleaved with its baseline in the
// same loop. Run:
//
//	go test -run '^$' -bench . -benchtime 2s ./isb/mmap

type rec100 [100]byte

const benchInterval = 10 * time.Millisecond

func benchPolicies() []struct {
	name   string
	policy FlushPolicy
	every  int // raw baseline: fdatasync after this many writes (0: on a timer)
} {
	return []struct {
		name   string
		policy FlushPolicy
		every  int
	}{
		{"Immediate", Immediate(), 1},
		{"Batch100", Batch(100), 100},
		{"Interval10ms", Interval(benchInterval), 0},
	}
}

func newBench[T any](b *testing.B, dir string, c codec.Codec[T], opts ...Option) *Backend[T] {
	b.Helper()
	be, err := New[T](dir, append([]Option{WithCodec(c)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := be.Open("bench", 1); err != nil {
		b.Fatal(err)
	}
	return be
}

func rawCodec(b *testing.B) codec.Codec[rec100] {
	c, err := codec.Raw[rec100]()
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// pair times two competitors interleaved in one loop, so the noise of a
// shared machine hits both alike, and reports each one's time per record
// and their ratio.
type pair struct {
	a, b         time.Duration
	aName, bName string // "mmap" and "raw" unless set
}

func (p *pair) run(side *time.Duration, f func()) {
	t := time.Now()
	f()
	*side += time.Since(t)
}

func (p *pair) report(b *testing.B, records int, unit string) {
	if p.aName == "" {
		p.aName, p.bName = "mmap", "raw"
	}
	n := float64(b.N) * float64(records)
	b.ReportMetric(float64(p.a.Nanoseconds())/n, p.aName+"-ns/"+unit)
	b.ReportMetric(float64(p.b.Nanoseconds())/n, p.bName+"-ns/"+unit)
	b.ReportMetric(float64(p.a)/float64(p.b), p.aName+"/"+p.bName)
}

// BenchmarkProduce appends one record per call to the log and, beside it
// in the same loop, writes the same record with write(2) to a plain file
// with fdatasync at the same boundaries (after every record, after every
// 100, or every 10ms from a timer goroutine).
func BenchmarkProduce(b *testing.B) {
	var item rec100
	for i := range item {
		item[i] = byte(i)
	}
	rec := make([]byte, recordSize(len(item)))
	copy(rec[recordHeaderSize:], item[:])
	frameRecord(rec, 0)
	for _, pol := range benchPolicies() {
		b.Run(pol.name, func(b *testing.B) {
			dir := b.TempDir()
			be := newBench(b, dir, rawCodec(b), Flush(pol.policy))
			defer be.Close()
			l := be.Partition(0)
			items := []rec100{item}

			f, err := os.OpenFile(filepath.Join(dir, "raw"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if pol.every == 0 {
				wg.Go(func() {
					t := time.NewTicker(benchInterval)
					defer t.Stop()
					for {
						select {
						case <-stop:
							return
						case <-t.C:
							fsutil.Fdatasync(f)
						}
					}
				})
			}
			var p pair
			b.ResetTimer()
			for i := range b.N {
				p.run(&p.a, func() {
					if _, err := waitWrite(l.Append(items)); err != nil {
						b.Fatal(err)
					}
				})
				p.run(&p.b, func() {
					if _, err := f.Write(rec); err != nil {
						b.Fatal(err)
					}
					if pol.every > 0 && (i+1)%pol.every == 0 {
						if err := fsutil.Fdatasync(f); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			p.report(b, 1, "rec")
		})
	}
}

// BenchmarkConsume reads 100 records per call from a log written
// beforehand and, beside it, preads the same bytes from a plain file and
// copies the payloads out (no checks: the floor of any reader).
func BenchmarkConsume(b *testing.B) {
	const n = 200_000
	dir := b.TempDir()
	be := newBench(b, dir, rawCodec(b), Flush(Batch(10_000)))
	defer be.Close()
	batch := make([]rec100, 1000)
	for i := 0; i < n; i += len(batch) {
		if _, err := waitWrite(be.Partition(0).Append(batch)); err != nil {
			b.Fatal(err)
		}
	}
	size := recordSize(100)
	rec := make([]byte, size)
	frameRecord(rec, 0)
	all := make([]byte, 0, n*size)
	for range n {
		all = append(all, rec...)
	}
	rawPath := filepath.Join(dir, "raw")
	if err := os.WriteFile(rawPath, all, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(rawPath)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()

	l := be.Partition(0)
	buf := make([]rec100, 100)
	chunk := make([]byte, 100*size)
	var p pair
	b.ResetTimer()
	for i := range b.N {
		off := int64(i*100) % n
		p.run(&p.a, func() {
			for got := 0; got < 100; {
				_, items, err := l.Read(bg, off+int64(got), 100-got, buf)
				if err != nil {
					b.Fatal(err)
				}
				got += len(items)
			}
		})
		p.run(&p.b, func() {
			if _, err := f.ReadAt(chunk, off*int64(size)); err != nil {
				b.Fatal(err)
			}
			for k := range buf {
				copy(buf[k][:], chunk[k*size+recordHeaderSize:])
			}
		})
	}
	b.StopTimer()
	p.report(b, 100, "rec")
}

// BenchmarkOpen opens (and closes) a topic retaining 1 GiB and, beside it
// in the same loop, one retaining 1 MiB, both with the default 256 MiB
// segments, after a clean Close and after a crash. The fixtures are built
// once per run.
func BenchmarkOpen(b *testing.B) {
	if testing.Short() {
		b.Skip("builds a 1 GiB fixture: skipped with -short")
	}
	type big [4096 - recordOverhead]byte
	c, err := codec.Raw[big]()
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	build := func(name string, bytes int64) string {
		dir := filepath.Join(root, name)
		be := newBench(b, dir, c, Flush(Interval(time.Second)))
		batch := make([]big, 256) // 1 MiB per append
		for range bytes >> 20 {
			if _, err := waitWrite(be.Partition(0).Append(batch)); err != nil {
				b.Fatal(err)
			}
		}
		if err := be.Close(); err != nil {
			b.Fatal(err)
		}
		return dir
	}
	large, small := build("1GiB", 1<<30), build("1MiB", 1<<20)
	reopen := func(dir string, want int64) {
		be, err := New[big](dir, WithCodec(c))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := be.Open("bench", 1); err != nil {
			b.Fatal(err)
		}
		if got := be.Partition(0).Tail(); got != want {
			b.Fatalf("tail %d, want %d", got, want)
		}
		if err := be.Close(); err != nil {
			b.Fatal(err)
		}
	}
	// crash marks the producer checkpoint as written by a running
	// process, so the open does the crash recovery work (cut the tail,
	// rewrite the checkpoint).
	crash := func(dir string) {
		path := filepath.Join(dir, "bench", partitionDirName(0), producerFile)
		v, err := readCheckpoint(path, kindProducer)
		if err != nil {
			b.Fatal(err)
		}
		v[4] = 0
		if err := os.WriteFile(path, encodeCheckpoint(kindProducer, v), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, crashed := range []bool{false, true} {
		b.Run(map[bool]string{false: "clean", true: "crashed"}[crashed], func(b *testing.B) {
			p := pair{aName: "1GiB", bName: "1MiB"}
			for range b.N {
				if crashed {
					crash(large)
					crash(small)
				}
				p.run(&p.a, func() { reopen(large, 1<<30>>12) })
				p.run(&p.b, func() { reopen(small, 1<<20>>12) })
			}
			p.report(b, 1, "open")
		})
	}
}

func ExampleNew() {
	dir, _ := os.MkdirTemp("", "mmap-example")
	defer os.RemoveAll(dir)
	b, err := New[string](dir, Flush(Batch(100)), MaxRetainedConsumedSegments(2))
	if err != nil {
		panic(err)
	}
	if _, err := b.Open("events", 1); err != nil {
		panic(err)
	}
	defer b.Close()
	ctx := context.Background()
	w, _ := b.Partition(0).Append([]string{"a", "b"})
	last, _ := w.Wait(ctx) // readable once Wait returns
	first := last - 1
	_, items, _ := b.Partition(0).Read(ctx, first, 10, nil)
	fmt.Println(first, items)
	// Output: 0 [a b]
}

// BenchmarkStagedBatches writes batches of 500 100-byte records under
// Immediate from one goroutine, as a pipeline's source does: "append"
// waits for each batch's flush (Append, then Write.Wait), "staged" appends
// each batch and lets a second goroutine wait their Writes, up to 4
// batches in flight (isb.Caps.Deferred, what the forwarder's source does),
// and "raw" writes each
// batch with one write(2) and one fdatasync to a plain file: the serial
// floor that "append" cannot beat and "staged" can.
//
//	go test -run '^$' -bench StagedBatches -count 3 ./isb/mmap
func BenchmarkStagedBatches(b *testing.B) {
	const batch, depth = 500, 4
	items := make([]rec100, batch)
	rec := make([]byte, recordSize(len(rec100{}))*batch)
	b.Run("append", func(b *testing.B) {
		be := newBench(b, b.TempDir(), rawCodec(b), SegmentSize(64<<20))
		defer be.Close()
		l := be.Partition(0)
		b.ResetTimer()
		for range b.N {
			if _, err := waitWrite(l.Append(items)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rec/s")
	})
	b.Run("staged", func(b *testing.B) {
		be := newBench(b, b.TempDir(), rawCodec(b), SegmentSize(64<<20))
		defer be.Close()
		p := be.parts[0]
		writes := make(chan isb.Write, depth-1) // with the one being appended: depth in flight
		errs := make(chan error, 1)
		go func() {
			var err error
			for w := range writes {
				if err == nil {
					_, err = w.Wait(bg)
				}
			}
			errs <- err
		}()
		b.ResetTimer()
		for range b.N {
			w, err := p.Append(items)
			if err != nil {
				b.Fatal(err)
			}
			if !w.Pending() {
				b.Fatal("Append under Immediate returned a complete Write: nothing is in flight")
			}
			writes <- w
		}
		close(writes)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rec/s")
	})
	b.Run("raw", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		b.ResetTimer()
		for range b.N {
			if _, err := f.Write(rec); err != nil {
				b.Fatal(err)
			}
			if err := fsutil.Fdatasync(f); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rec/s")
	})
}
