// Package metric holds the latency histogram the data plane and the
// storages keep: a fixed set of buckets updated with atomic adds, read at
// any time by Snapshot. It exists so that the packages that count
// (forwarder, isb/mmap through a callback, wal through a callback) need no
// metrics library: package pipeline turns snapshots into its Status, and
// pipeline/monitor into Prometheus histograms at scrape time.
package metric

import (
	"sync/atomic"
	"time"
)

// Bounds are the upper bounds of every histogram's buckets, from 25µs (a
// memory pipeline's batch) to 10 s (a stuck flush). One set for all keeps
// snapshots comparable and the bucket search a loop over constants.
var Bounds = [...]time.Duration{
	25 * time.Microsecond, 50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// Histogram counts durations into Bounds. The zero value is ready; it is
// safe for concurrent use. Observe costs a short loop and two atomic adds,
// so callers observe once per batch, not per message.
type Histogram struct {
	counts [len(Bounds) + 1]atomic.Uint64 // the last: above every bound
	sum    atomic.Int64                   // nanoseconds
}

// Observe counts d.
func (h *Histogram) Observe(d time.Duration) {
	i := 0
	for i < len(Bounds) && d > Bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
}

// Since observes the time since start.
func (h *Histogram) Since(start time.Time) { h.Observe(time.Since(start)) }

// Snapshot is a histogram's counts at one moment.
type Snapshot struct {
	// Counts has one count per bucket, not cumulative: Counts[i] counts
	// durations in (Bounds[i-1], Bounds[i]], the last those above every
	// bound.
	Counts [len(Bounds) + 1]uint64
	Count  uint64        // the sum of Counts
	Sum    time.Duration // of every duration counted
}

// Snapshot returns the current counts. Observations running meanwhile may
// be in the sum and not yet in a count, or the reverse; Count is the sum
// of Counts either way.
func (h *Histogram) Snapshot() Snapshot {
	var s Snapshot
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
		s.Count += s.Counts[i]
	}
	s.Sum = time.Duration(h.sum.Load())
	return s
}

// Add returns the bucket-wise sum of s and o (a vertex's histogram over
// its replicas).
func (s Snapshot) Add(o Snapshot) Snapshot {
	for i := range s.Counts {
		s.Counts[i] += o.Counts[i]
	}
	s.Count += o.Count
	s.Sum += o.Sum
	return s
}
