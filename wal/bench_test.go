package wal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	tidwall "github.com/tidwall/wal"
)

// Benchmarks, run together so the ratios compare one machine state:
//
//	go test -run '^$' -bench . -benchtime 3x ./wal/   (see docs/benchmarks.md)
//
// Append: this WAL's Append of a batch beside raw tidwall/wal WriteBatch of
// as many entries of the same encoded size, each with one fsync per batch.
// Replay: 1,000,000 entries of ~100-byte values, beside tidwall/wal's own
// Read of every index of the same files; Restart: Open plus a full Replay.

const benchValue = 100

func benchEntry(seq int64) Entry {
	e := msg(int32(seq%4), seq, int(seq/100_000))
	e.Value = append(e.Value[:0], strings.Repeat("v", benchValue)...)
	return e
}

func BenchmarkAppend(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		batch := make([]Entry, n)
		for i := range batch {
			batch[i] = benchEntry(int64(i))
		}
		encoded := len(appendMessage(nil, &batch[0]))
		b.Run(fmt.Sprintf("wal/batch=%d", n), func(b *testing.B) {
			w := openT(b, b.TempDir(), CompactEvery(0))
			defer closeT(b, w)
			b.SetBytes(int64(n * encoded))
			for b.Loop() {
				if err := w.Append(ctx, batch...); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "entries/s")
		})
		b.Run(fmt.Sprintf("tidwall/batch=%d", n), func(b *testing.B) {
			l, err := tidwall.Open(b.TempDir(), &tidwall.Options{SegmentSize: DefaultSegmentSize})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			data := []byte(strings.Repeat("e", encoded))
			var tb tidwall.Batch
			index := uint64(0)
			b.SetBytes(int64(n * encoded))
			for b.Loop() {
				for range n {
					index++
					tb.Write(index, data)
				}
				if err := l.WriteBatch(&tb); err != nil { // one fsync
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "entries/s")
		})
	}
	// Group commit: 8 goroutines each appending batches of 10 share fsyncs.
	b.Run("wal/8-appenders-batch=10", func(b *testing.B) {
		w := openT(b, b.TempDir(), CompactEvery(0))
		defer closeT(b, w)
		batch := make([]Entry, 10)
		for i := range batch {
			batch[i] = benchEntry(int64(i))
		}
		var ops sync.WaitGroup
		b.ResetTimer()
		per := (b.N + 7) / 8
		for range 8 {
			ops.Go(func() {
				for range per {
					if err := w.Append(ctx, batch...); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		ops.Wait()
		st := w.Stats()
		b.ReportMetric(float64(8*per*10)/b.Elapsed().Seconds(), "entries/s")
		b.ReportMetric(float64(st.Entries)/float64(st.Batches), "entries/fsync")
	})
}

// A 1,000,000-entry WAL, built once per benchmark binary run and removed
// by TestMain.
var (
	bigOnce sync.Once
	bigDir  string
	bigErr  error
)

const bigEntries = 1_000_000

func bigWAL(b *testing.B) string {
	bigOnce.Do(func() {
		bigDir, bigErr = os.MkdirTemp("", "wal-bench-")
		if bigErr != nil {
			return
		}
		w, err := Open(bigDir, CompactEvery(0))
		if err != nil {
			bigErr = err
			return
		}
		batch := make([]Entry, 1000)
		for i := int64(0); i < bigEntries; i += int64(len(batch)) {
			for j := range batch {
				batch[j] = benchEntry(i + int64(j))
			}
			if err := w.Append(ctx, batch...); err != nil {
				bigErr = err
				break
			}
		}
		if err := w.Close(); bigErr == nil {
			bigErr = err
		}
	})
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	return bigDir
}

func BenchmarkReplay(b *testing.B) {
	dir := bigWAL(b)
	b.Run("wal", func(b *testing.B) {
		w := openT(b, dir, CompactEvery(0))
		defer closeT(b, w)
		cpu0 := cpuTime()
		for b.Loop() {
			n := 0
			for e, err := range w.Replay() {
				if err != nil {
					b.Fatal(err)
				}
				n += len(e.Value)
			}
			if n != bigEntries*benchValue {
				b.Fatalf("replayed %d value bytes", n)
			}
		}
		reportReplay(b, cpu0)
	})
	b.Run("tidwall-read", func(b *testing.B) {
		gens, _ := filepath.Glob(filepath.Join(dir, genPrefix+"*"))
		cpu0 := cpuTime()
		for b.Loop() {
			l, err := tidwall.Open(gens[0], &tidwall.Options{SegmentSize: DefaultSegmentSize, NoCopy: true})
			if err != nil {
				b.Fatal(err)
			}
			last, _ := l.LastIndex()
			n := 0
			for i := uint64(2); i <= last; i++ {
				data, err := l.Read(i)
				if err != nil {
					b.Fatal(err)
				}
				n += len(data)
			}
			l.Close()
			if last != bigEntries+1 {
				b.Fatalf("tidwall/wal read %d entries", last-1)
			}
		}
		reportReplay(b, cpu0)
	})
	// Open alone: lock, check every entry's crc, open tidwall/wal.
	b.Run("open", func(b *testing.B) {
		cpu0 := cpuTime()
		for b.Loop() {
			closeT(b, openT(b, dir, CompactEvery(0)))
		}
		reportReplay(b, cpu0)
	})
	// Restart: Open (lock, check every entry's crc, open tidwall/wal) and
	// a full Replay: the WAL is then ready for the reduce to read on.
	b.Run("restart", func(b *testing.B) {
		cpu0 := cpuTime()
		for b.Loop() {
			w := openT(b, dir, CompactEvery(0))
			n := 0
			for _, err := range w.Replay() {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			closeT(b, w)
			if n != bigEntries {
				b.Fatalf("replayed %d entries", n)
			}
		}
		b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/restart")
		b.ReportMetric((cpuTime()-cpu0).Seconds()*1000/float64(b.N), "cpu-ms/restart")
	})
}

// cpuTime is the user and system CPU time of the process so far. The
// machine is shared (load average often far above its 2 cores), so the
// replay benchmarks report entries per CPU-second beside wall-clock ones.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportReplay reports entries/s by wall clock and by CPU time since cpu0.
func reportReplay(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(b.N*bigEntries)/b.Elapsed().Seconds(), "entries/s")
	b.ReportMetric(float64(b.N*bigEntries)/(cpuTime()-cpu0).Seconds(), "entries/cpu-s")
}
