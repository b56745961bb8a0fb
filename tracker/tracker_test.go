package tracker

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// wmAt is a deterministic watermark for tests: the epoch plus ms milliseconds.
func wmAt(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func TestTableOperations(t *testing.T) {
	tr := New[string](2)
	steps := []struct {
		name string
		run  func() error
	}{
		{"insert p0 o5", func() error { return tr.Insert(0, 5, wmAt(50), "a") }},
		{"insert p0 o3", func() error { return tr.Insert(0, 3, wmAt(40), "b") }},
		{"insert p1 o9", func() error { return tr.Insert(1, 9, wmAt(20), "c") }},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	if got := tr.Len(); got != 3 {
		t.Fatalf("Len = %d, want 3", got)
	}
	if off, ok := tr.LowestOffset(0); !ok || off != 3 {
		t.Fatalf("LowestOffset(0) = %d,%v, want 3,true", off, ok)
	}
	if wm, ok := tr.LowestWatermark(); !ok || !wm.Equal(wmAt(20)) {
		t.Fatalf("LowestWatermark = %v,%v, want %v,true", wm, ok, wmAt(20))
	}
	// A duplicate is refused and the original payload stays.
	if err := tr.Insert(0, 5, wmAt(1), "dup"); !errors.Is(err, ErrTracked) {
		t.Fatalf("duplicate insert: err = %v, want ErrTracked", err)
	}
	if got := tr.Len(); got != 3 {
		t.Fatalf("Len after duplicate = %d, want 3", got)
	}
	if a, ok := tr.Delete(1, 9); !ok || a != "c" {
		t.Fatalf("Delete(1,9) = %q,%v, want c,true", a, ok)
	}
	if _, ok := tr.LowestOffset(1); ok {
		t.Fatal("LowestOffset(1) ok after partition emptied")
	}
	// Partition 0's oldest entry is offset 3 with watermark 40: that is the
	// lowest watermark, even though offset 5 is not older in offset order.
	if wm, ok := tr.LowestWatermark(); !ok || !wm.Equal(wmAt(40)) {
		t.Fatalf("LowestWatermark = %v,%v, want %v,true", wm, ok, wmAt(40))
	}
	if a, ok := tr.Delete(0, 3); !ok || a != "b" {
		t.Fatalf("Delete(0,3) = %q,%v, want b,true", a, ok)
	}
	if off, ok := tr.LowestOffset(0); !ok || off != 5 {
		t.Fatalf("LowestOffset(0) = %d,%v, want 5,true", off, ok)
	}
	if wm, ok := tr.LowestWatermark(); !ok || !wm.Equal(wmAt(50)) {
		t.Fatalf("LowestWatermark = %v,%v, want %v,true", wm, ok, wmAt(50))
	}
	if a, ok := tr.Delete(0, 5); !ok || a != "a" {
		t.Fatalf("Delete(0,5) = %q,%v, want a,true", a, ok)
	}
	if _, ok := tr.Delete(0, 5); ok {
		t.Fatal("second Delete(0,5) reported tracked")
	}
	if _, ok := tr.LowestWatermark(); ok {
		t.Fatal("LowestWatermark ok with nothing in flight")
	}
	if got := tr.Len(); got != 0 {
		t.Fatalf("Len = %d, want 0", got)
	}
}

func TestPartitionOutOfRange(t *testing.T) {
	tr := New[int](3)
	for _, p := range []int{-1, 3, 100} {
		if err := tr.Insert(p, 1, wmAt(1), 0); !errors.Is(err, ErrPartition) {
			t.Errorf("Insert(%d) err = %v, want ErrPartition", p, err)
		}
		if _, ok := tr.Delete(p, 1); ok {
			t.Errorf("Delete(%d) ok, want false", p)
		}
		if _, ok := tr.LowestOffset(p); ok {
			t.Errorf("LowestOffset(%d) ok, want false", p)
		}
		if n := tr.PartitionLen(p); n != 0 {
			t.Errorf("PartitionLen(%d) = %d, want 0", p, n)
		}
	}
	if err := tr.Insert(3, 7, wmAt(1), 0); err == nil ||
		err.Error() != "tracker: partition out of range: insert of offset 7 into partition 3, want 0..2" {
		t.Errorf("error text = %v", err)
	}
	if tr.Len() != 0 {
		t.Errorf("Len = %d after refused inserts, want 0", tr.Len())
	}
}

func TestNewPanicsOnNoPartitions(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("New(0) did not panic")
		}
	}()
	New[int](0)
}

// model is the naive reference: a map per partition, sorted on every query.
type model struct {
	parts []map[int64]modelEntry
}

type modelEntry struct {
	wm  time.Time
	ack int
}

func newModel(n int) *model {
	m := &model{parts: make([]map[int64]modelEntry, n)}
	for i := range m.parts {
		m.parts[i] = map[int64]modelEntry{}
	}
	return m
}

func (m *model) lowest(p int) (int64, bool) {
	keys := make([]int64, 0, len(m.parts[p]))
	for k := range m.parts[p] {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return 0, false
	}
	slices.Sort(keys)
	return keys[0], true
}

func (m *model) lowestWM() (time.Time, bool) {
	var wm time.Time
	ok := false
	for p := range m.parts {
		if off, has := m.lowest(p); has {
			w := m.parts[p][off].wm
			if !ok || w.Before(wm) {
				wm, ok = w, true
			}
		}
	}
	return wm, ok
}

func (m *model) len() int {
	n := 0
	for _, p := range m.parts {
		n += len(p)
	}
	return n
}

// TestAgainstModel runs seeded random operations, biased to keep a few
// hundred entries in flight, and compares every result with the model. Two
// kinds of inserts: random offsets (most land in the B-tree), and a
// reader's (ascending per partition with gaps, now and then rewinding), which
// land in the fifo and mix with the B-tree after a rewind.
func TestAgainstModel(t *testing.T) {
	for _, reader := range []bool{false, true} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("reader=%v/seed=%d", reader, seed), func(t *testing.T) {
				testAgainstModel(t, seed, reader)
			})
		}
	}
}

func testAgainstModel(t *testing.T, seed uint64, reader bool) {
	rng := rand.New(rand.NewPCG(seed, 99))
	const parts = 4
	tr, m := New[int](parts), newModel(parts)
	next := make([]int64, parts+1) // the reader's next offset per partition
	for op := range 10000 {
		p := rng.IntN(parts + 1) // parts itself is out of range on purpose
		off := rng.Int64N(600)
		if reader {
			switch rng.IntN(50) {
			case 0: // rewind: offsets below the fifo's highest
				next[p] = max(0, next[p]-rng.Int64N(40))
			case 1, 2, 3: // a gap (control messages)
				next[p] += rng.Int64N(5)
			}
			off = next[p]
			next[p]++
		}
		switch rng.IntN(10) {
		case 0, 1, 2, 3, 4:
			wm := wmAt(rng.Int64N(1_000_000))
			err := tr.Insert(p, off, wm, op)
			switch {
			case p == parts:
				if !errors.Is(err, ErrPartition) {
					t.Fatalf("seed %d op %d: Insert(%d) err = %v, want ErrPartition", seed, op, p, err)
				}
			case hasKey(m.parts[p], off):
				if !errors.Is(err, ErrTracked) {
					t.Fatalf("seed %d op %d: Insert dup err = %v, want ErrTracked", seed, op, err)
				}
			default:
				if err != nil {
					t.Fatalf("seed %d op %d: Insert err = %v", seed, op, err)
				}
				m.parts[p][off] = modelEntry{wm: wm, ack: op}
			}
		case 5, 6, 7, 8:
			// Delete the partition's lowest half the time (FIFO acks),
			// a random offset otherwise (out-of-order acks, misses).
			if p < parts && rng.IntN(2) == 0 {
				if low, ok := m.lowest(p); ok {
					off = low
				}
			}
			a, ok := tr.Delete(p, off)
			var want modelEntry
			wantOK := false
			if p < parts {
				want, wantOK = m.parts[p][off]
				delete(m.parts[p], off)
			}
			if ok != wantOK || (ok && a != want.ack) {
				t.Fatalf("seed %d op %d: Delete(%d,%d) = %d,%v, want %d,%v", seed, op, p, off, a, ok, want.ack, wantOK)
			}
		case 9:
			if p == parts {
				continue
			}
			got, ok := tr.LowestOffset(p)
			want, wantOK := m.lowest(p)
			if got != want || ok != wantOK {
				t.Fatalf("seed %d op %d: LowestOffset(%d) = %d,%v, want %d,%v", seed, op, p, got, ok, want, wantOK)
			}
		}
		gotWM, ok := tr.LowestWatermark()
		wantWM, wantOK := m.lowestWM()
		if ok != wantOK || !gotWM.Equal(wantWM) {
			t.Fatalf("seed %d op %d: LowestWatermark = %v,%v, want %v,%v", seed, op, gotWM, ok, wantWM, wantOK)
		}
		if tr.Len() != m.len() {
			t.Fatalf("seed %d op %d: Len = %d, want %d", seed, op, tr.Len(), m.len())
		}
	}
}

func hasKey(m map[int64]modelEntry, k int64) bool { _, ok := m[k]; return ok }

// TestConcurrent has one goroutine per partition inserting and acking
// (in and out of order) while others read LowestWatermark and Len; each
// partition's goroutine checks its own results against a private model, so
// the final state and every per-partition answer are exact.
func TestConcurrent(t *testing.T) {
	const parts = 4
	tr := New[int64](parts)
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if n := tr.Len(); n < 0 {
					t.Errorf("Len = %d", n)
				}
				tr.LowestWatermark()
			}
		})
	}
	var writers sync.WaitGroup
	for p := range parts {
		writers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(p), 7))
			m := newModel(1)
			next := int64(0)
			for range 5000 {
				if len(m.parts[0]) < 50 && rng.IntN(3) > 0 {
					if err := tr.Insert(p, next, wmAt(next), next); err != nil {
						t.Errorf("partition %d: Insert(%d): %v", p, next, err)
						return
					}
					m.parts[0][next] = modelEntry{wm: wmAt(next), ack: int(next)}
					next++
					continue
				}
				off, ok := m.lowest(0)
				if !ok {
					continue
				}
				if rng.IntN(4) == 0 { // out of order: a random tracked offset
					for k := range m.parts[0] {
						off = k
						break
					}
				}
				a, ok := tr.Delete(p, off)
				if !ok || a != off {
					t.Errorf("partition %d: Delete(%d) = %d,%v", p, off, a, ok)
					return
				}
				delete(m.parts[0], off)
				got, gotOK := tr.LowestOffset(p)
				want, wantOK := m.lowest(0)
				if got != want || gotOK != wantOK {
					t.Errorf("partition %d: LowestOffset = %d,%v, want %d,%v", p, got, gotOK, want, wantOK)
					return
				}
			}
			// Drain: the partition ends empty.
			for off := range m.parts[0] {
				if _, ok := tr.Delete(p, off); !ok {
					t.Errorf("partition %d: drain Delete(%d) not tracked", p, off)
				}
			}
		})
	}
	writers.Wait()
	close(stop)
	readers.Wait()
	if tr.Len() != 0 {
		t.Fatalf("Len = %d after drain, want 0", tr.Len())
	}
	if _, ok := tr.LowestWatermark(); ok {
		t.Fatal("LowestWatermark ok after drain")
	}
}

func TestWatermarkConversion(t *testing.T) {
	far := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	early := time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		in   time.Time
		want time.Time
	}{
		{"zero stays zero", time.Time{}, time.Time{}},
		{"nanosecond kept", time.Unix(5, 123456789), time.Unix(5, 123456789)},
		{"past 2262 clamps", far, maxTime},
		{"before 1678 clamps", early, minTime},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := New[int](1)
			if err := tr.Insert(0, 1, c.in, 0); err != nil {
				t.Fatal(err)
			}
			got, ok := tr.LowestWatermark()
			if !ok || !got.Equal(c.want) || got.IsZero() != c.want.IsZero() {
				t.Fatalf("LowestWatermark = %v,%v, want %v", got, ok, c.want)
			}
		})
	}
	// The zero watermark sorts below every real one.
	tr := New[int](2)
	_ = tr.Insert(0, 1, early, 0)
	_ = tr.Insert(1, 1, time.Time{}, 0)
	if got, _ := tr.LowestWatermark(); !got.IsZero() {
		t.Fatalf("LowestWatermark = %v, want the zero Time", got)
	}
}

// TestReaderPatternStaysInFIFO: a reader's ascending inserts with acks
// in and out of order never touch the B-tree, and the fifo's slice stays
// proportional to what is in flight (compaction), while the commit point
// stays exact.
func TestReaderPatternStaysInFIFO(t *testing.T) {
	const inflight = 300
	rng := rand.New(rand.NewPCG(5, 5))
	tr := New[int64](1)
	p := &tr.parts[0]
	tracked := map[int64]bool{}
	next := int64(0)
	for range 20000 {
		if len(tracked) < inflight {
			if err := tr.Insert(0, next, wmAt(next), next); err != nil {
				t.Fatal(err)
			}
			tracked[next] = true
			next += 1 + rng.Int64N(2) // gaps, as control messages leave
			continue
		}
		// Ack the oldest half the time, a random tracked one otherwise.
		low, _ := tr.LowestOffset(0)
		off := low
		if rng.IntN(2) == 0 {
			for o := range tracked {
				off = o
				break
			}
		}
		if a, ok := tr.Delete(0, off); !ok || a != off {
			t.Fatalf("Delete(%d) = %d, %v", off, a, ok)
		}
		delete(tracked, off)
		want := next
		for o := range tracked {
			want = min(want, o)
		}
		if got, ok := tr.LowestOffset(0); len(tracked) > 0 && (!ok || got != want) {
			t.Fatalf("commit point %d, %v; want %d", got, ok, want)
		}
		if n := p.tree.Len(); n != 0 {
			t.Fatalf("the B-tree holds %d entries on the reader's path", n)
		}
		if n := len(p.fifo.items); n > 2*2*inflight+compactAfter {
			t.Fatalf("fifo slice of %d entries with %d in flight", n, len(tracked))
		}
	}
}
