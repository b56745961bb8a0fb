package pipeline

import (
	"time"

	"github.com/runnel-dev/runnel/forwarder"
)

// VertexStats are the counters of one vertex: the sums over its replicas
// (PeakInFlight is the highest of any one replica), the messages waiting in
// its input buffer, and each replica's own counters.
type VertexStats struct {
	Name     string
	Kind     string // "source", "map", "reduce" or "sink"
	Replicas int
	Counters // the sums over the replicas
	// Pending counts the messages of the input buffer not yet committed:
	// waiting or in flight (0 for sources).
	Pending    int64
	PerReplica []Counters
	// Watermark is the vertex's event-time watermark: for a source the
	// lowest watermark of its partitions (replicas), for other vertices the
	// lowest watermark its replicas read. Zero until every replica has one,
	// and when watermarks are off. It never decreases.
	Watermark time.Time
}

// Counters are the message counts of one replica, or their sums over a
// vertex's replicas in [VertexStats]. Every count only grows during a run,
// except InFlight.
type Counters struct {
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

// Stats returns the counters of every vertex, in the order they were
// added. It may be called at any time, also while Run runs; before Run
// every counter is zero.
func (p *Pipeline) Stats() []VertexStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]VertexStats, 0, len(p.nodes))
	for _, n := range p.nodes {
		s := VertexStats{Name: n.name, Kind: n.kind.String(), Replicas: len(n.counters)}
		var sum forwarder.Stats
		for _, c := range n.counters {
			r := c.Snapshot()
			s.PerReplica = append(s.PerReplica, Counters(r))
			sum = sum.Add(r)
		}
		s.Counters = Counters(sum)
		if n.wm != nil {
			s.Watermark = n.wm.watermark()
		}
		switch {
		case p.live && n.in != nil:
			s.Pending = n.in.pending()
		default:
			s.Pending = n.final
		}
		out = append(out, s)
	}
	return out
}
