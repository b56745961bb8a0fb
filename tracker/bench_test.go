package tracker

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// The benchmarks run one reader/ack pair per iteration, FIFO, with a
// steady number of offsets in flight: Insert the next offset, Delete the
// oldest, read the commit point (LowestOffset). That is what the forwarder
// does per message. The baselines do the same with a mutex and
//   - sliceQueue: a FIFO slice; the cheapest possible structure, but it
//     cannot take out-of-order acks, so it is a lower bound, not an option;
//   - mapScan: a map of offsets with the commit point found by a scan, the
//     naive structure that does take out-of-order acks.

var benchInFlight = []int{500, 5000}

func BenchmarkFIFO(b *testing.B) {
	wm := time.UnixMilli(1)
	for _, n := range benchInFlight {
		b.Run(fmt.Sprintf("tracker/inflight=%d", n), func(b *testing.B) {
			tr := New[int64](1)
			for off := range int64(n) {
				_ = tr.Insert(0, off, wm, off)
			}
			next, oldest := int64(n), int64(0)
			b.ReportAllocs()
			for b.Loop() {
				if err := tr.Insert(0, next, wm, next); err != nil {
					b.Fatal(err)
				}
				next++
				if _, ok := tr.Delete(0, oldest); !ok {
					b.Fatal("oldest not tracked")
				}
				oldest++
				if low, _ := tr.LowestOffset(0); low != oldest {
					b.Fatalf("commit point %d, want %d", low, oldest)
				}
			}
		})
		b.Run(fmt.Sprintf("sliceQueue/inflight=%d", n), func(b *testing.B) {
			q := &sliceQueue{}
			for off := range int64(n) {
				q.push(off)
			}
			next := int64(n)
			b.ReportAllocs()
			for b.Loop() {
				q.push(next)
				next++
				q.pop()
				q.lowest()
			}
		})
		b.Run(fmt.Sprintf("mapScan/inflight=%d", n), func(b *testing.B) {
			m := &mapScan{m: map[int64]int64{}}
			for off := range int64(n) {
				m.insert(off)
			}
			next, oldest := int64(n), int64(0)
			b.ReportAllocs()
			for b.Loop() {
				m.insert(next)
				next++
				m.delete(oldest)
				oldest++
				if m.lowest() != oldest {
					b.Fatal("wrong commit point")
				}
			}
		})
	}
}

// BenchmarkLowestWatermark is the publisher's per-write read over 4
// partitions with 500 entries each.
func BenchmarkLowestWatermark(b *testing.B) {
	tr := New[int64](4)
	for p := range 4 {
		for off := range int64(500) {
			_ = tr.Insert(p, off, time.UnixMilli(off), off)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := tr.LowestWatermark(); !ok {
			b.Fatal("empty")
		}
	}
}

type sliceQueue struct {
	mu   sync.Mutex
	q    []int64
	head int
}

func (s *sliceQueue) push(off int64) {
	s.mu.Lock()
	s.q = append(s.q, off)
	s.mu.Unlock()
}

func (s *sliceQueue) pop() {
	s.mu.Lock()
	s.head++
	// Compact when the dead prefix is half the slice, so memory stays bounded.
	if s.head > len(s.q)/2 {
		s.q = append(s.q[:0], s.q[s.head:]...)
		s.head = 0
	}
	s.mu.Unlock()
}

func (s *sliceQueue) lowest() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.q[s.head]
}

type mapScan struct {
	mu sync.Mutex
	m  map[int64]int64
}

func (m *mapScan) insert(off int64) {
	m.mu.Lock()
	m.m[off] = off
	m.mu.Unlock()
}

func (m *mapScan) delete(off int64) {
	m.mu.Lock()
	delete(m.m, off)
	m.mu.Unlock()
}

func (m *mapScan) lowest() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	low, first := int64(0), true
	for k := range m.m {
		if first || k < low {
			low, first = k, false
		}
	}
	return low
}
