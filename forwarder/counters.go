package forwarder

import (
	"sync/atomic"
	"time"

	"github.com/runnel-dev/runnel/internal/metric"
)

// Counters are the running totals of one replica. The forwarder updates
// them; anyone may read them at any time with Snapshot, Latency and
// LastError. Everything is updated per batch or per chunk, never per
// message, except on error paths.
type Counters struct {
	read, written, acked, retried, fallback, late, results atomic.Int64
	drops                                                  [numDropReasons]atomic.Int64
	inFlight, peakInFlight, openWindows                    atomic.Int64
	latency                                                metric.Histogram
	lastErr                                                atomic.Pointer[ErrorRecord]
}

// dropReason indexes Counters.drops: the reasons of droplog.go, as
// DropCounts counts them.
type dropReason uint8

const (
	reasonTagged  dropReason = iota // DropTagged
	reasonNoEdge                    // DropUnrouted
	reasonFull                      // DropFull
	reasonRetries                   // DropExhausted
	reasonLate                      // DropLate
	numDropReasons
)

// DropCounts are dropped messages by reason (the reasons of DropLog).
type DropCounts struct {
	Tagged  int64 // DropTagged: tagged vertex.DropTag
	NoEdge  int64 // DropUnrouted: no outgoing edge's condition matched the tags
	Full    int64 // DropFull: the destination buffer was full and the edge discards
	Retries int64 // DropExhausted: the retry policy gave up (vertex.DropMessage)
	Late    int64 // DropLate: a reduce's late message without a late stream
}

// Stats is a snapshot of [Counters].
type Stats struct {
	Read         int64      // messages read (from the input buffer or the source)
	Written      int64      // messages written to downstream buffers, or delivered by a sink (a reduce: results and late messages)
	Acked        int64      // input messages acked (done, including dropped)
	Dropped      int64      // messages dropped, for any reason: the sum of Drops
	Retried      int64      // retries of UDF calls or sink writes, per message
	Fallback     int64      // messages delivered to the fallback sink
	Results      int64      // reduce: window results emitted (one per window, key and output of the reduce function)
	Late         int64      // reduce: messages whose windows were all closed (to the late stream, or dropped without one)
	InFlight     int64      // messages read and not yet acked, now
	PeakInFlight int64      // the highest InFlight seen
	OpenWindows  int64      // reduce: open windows now, one per window and key
	Drops        DropCounts // the dropped messages by reason
}

// Snapshot returns the current values.
func (c *Counters) Snapshot() Stats {
	s := Stats{
		Read: c.read.Load(), Written: c.written.Load(), Acked: c.acked.Load(),
		Retried: c.retried.Load(), Fallback: c.fallback.Load(), Results: c.results.Load(), Late: c.late.Load(),
		InFlight: c.inFlight.Load(), PeakInFlight: c.peakInFlight.Load(), OpenWindows: c.openWindows.Load(),
	}
	s.Drops = DropCounts{
		Tagged: c.drops[reasonTagged].Load(), NoEdge: c.drops[reasonNoEdge].Load(), Full: c.drops[reasonFull].Load(),
		Retries: c.drops[reasonRetries].Load(), Late: c.drops[reasonLate].Load(),
	}
	s.Dropped = s.Drops.Tagged + s.Drops.NoEdge + s.Drops.Full + s.Drops.Retries + s.Drops.Late
	return s
}

// Add returns the field-wise sum of s and o, with PeakInFlight the larger
// of the two (a peak does not add up over replicas).
func (s Stats) Add(o Stats) Stats {
	out := Stats{
		Read: s.Read + o.Read, Written: s.Written + o.Written, Acked: s.Acked + o.Acked,
		Dropped: s.Dropped + o.Dropped, Retried: s.Retried + o.Retried, Fallback: s.Fallback + o.Fallback, Results: s.Results + o.Results, Late: s.Late + o.Late,
		InFlight: s.InFlight + o.InFlight, PeakInFlight: max(s.PeakInFlight, o.PeakInFlight), OpenWindows: s.OpenWindows + o.OpenWindows,
	}
	out.Drops = DropCounts{
		Tagged: s.Drops.Tagged + o.Drops.Tagged, NoEdge: s.Drops.NoEdge + o.Drops.NoEdge, Full: s.Drops.Full + o.Drops.Full,
		Retries: s.Drops.Retries + o.Drops.Retries, Late: s.Drops.Late + o.Drops.Late,
	}
	return out
}

// Latency is the replica's processing time: from the read of a batch to
// the acknowledgement of its messages, one observation per chunk (a
// source: per batch read).
func (c *Counters) Latency() metric.Snapshot { return c.latency.Snapshot() }

// ErrorRecord is an error a replica met and survived (it retried, or
// dropped the message), or the one that failed it.
type ErrorRecord struct {
	Time    time.Time
	Message string
}

// LastError returns the last error recorded, nil when there was none.
func (c *Counters) LastError() *ErrorRecord { return c.lastErr.Load() }

// NoteError records err as the replica's last error (nil: nothing). The
// forwarder records the errors it retries or drops messages for; the
// pipeline records the one that failed the replica. It runs on error
// paths only.
func (c *Counters) NoteError(err error) {
	if err != nil {
		c.lastErr.Store(&ErrorRecord{Time: time.Now(), Message: err.Error()})
	}
}

// drop counts n messages dropped for reason.
func (c *Counters) drop(reason dropReason, n int) {
	if n > 0 {
		c.drops[reason].Add(int64(n))
	}
}

// enter counts n messages taken in flight.
func (c *Counters) enter(n int) {
	v := c.inFlight.Add(int64(n))
	for {
		p := c.peakInFlight.Load()
		if v <= p || c.peakInFlight.CompareAndSwap(p, v) {
			return
		}
	}
}

// EdgeCounters are the totals of one edge, shared by the replicas of the
// vertex writing it.
type EdgeCounters struct {
	written, discarded atomic.Int64
}

// EdgeStats is a snapshot of [EdgeCounters].
type EdgeStats struct {
	Written   int64 // messages written to the edge's buffer
	Discarded int64 // messages the edge discarded because the buffer was full
}

// Snapshot returns the current values.
func (e *EdgeCounters) Snapshot() EdgeStats {
	return EdgeStats{Written: e.written.Load(), Discarded: e.discarded.Load()}
}
