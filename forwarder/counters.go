package forwarder

import "sync/atomic"

// Counters are the running totals of one replica. The forwarder updates
// them; anyone may read them at any time with Snapshot.
type Counters struct {
	read, written, acked, dropped, retried, fallback, late, results atomic.Int64
	inFlight, peakInFlight                                          atomic.Int64
}

// Stats is a snapshot of [Counters].
type Stats struct {
	Read         int64 // messages read (from the input buffer or the source)
	Written      int64 // messages written to downstream buffers, or delivered by a sink (a reduce: results and late messages)
	Acked        int64 // input messages acked (done, including dropped)
	Dropped      int64 // messages dropped: drop tag, no matching edge, full buffer, retries exhausted
	Retried      int64 // retries of UDF calls or sink writes, per message
	Fallback     int64 // messages delivered to the fallback sink
	Results      int64 // reduce: window results emitted (one per window, key and output of the reduce function)
	Late         int64 // reduce: messages whose windows were all closed (to the late stream, or dropped without one)
	InFlight     int64 // messages read and not yet acked, now
	PeakInFlight int64 // the highest InFlight seen
}

// Snapshot returns the current values.
func (c *Counters) Snapshot() Stats {
	return Stats{
		Read: c.read.Load(), Written: c.written.Load(), Acked: c.acked.Load(),
		Dropped: c.dropped.Load(), Retried: c.retried.Load(), Fallback: c.fallback.Load(), Results: c.results.Load(), Late: c.late.Load(),
		InFlight: c.inFlight.Load(), PeakInFlight: c.peakInFlight.Load(),
	}
}

// Add returns the field-wise sum of s and o, with PeakInFlight the larger
// of the two (a peak does not add up over replicas).
func (s Stats) Add(o Stats) Stats {
	return Stats{
		Read: s.Read + o.Read, Written: s.Written + o.Written, Acked: s.Acked + o.Acked,
		Dropped: s.Dropped + o.Dropped, Retried: s.Retried + o.Retried, Fallback: s.Fallback + o.Fallback, Results: s.Results + o.Results, Late: s.Late + o.Late,
		InFlight: s.InFlight + o.InFlight, PeakInFlight: max(s.PeakInFlight, o.PeakInFlight),
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
