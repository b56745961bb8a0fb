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
	forwarder.Stats
	// Pending counts the messages of the input buffer not yet committed:
	// waiting or in flight (0 for sources).
	Pending    int64
	PerReplica []forwarder.Stats
	// Watermark is the vertex's event-time watermark: for a source the
	// lowest watermark of its partitions (replicas), for other vertices the
	// lowest watermark its replicas read. Zero until every replica has one,
	// and when watermarks are off. It never decreases.
	Watermark time.Time
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
		for _, c := range n.counters {
			r := c.Snapshot()
			s.PerReplica = append(s.PerReplica, r)
			s.Stats = s.Stats.Add(r)
		}
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
