package pipeline

import (
	"time"

	"github.com/runnel-dev/runnel/forwarder"
)

// VertexStats are the counters of one vertex: the sums over its replicas
// (PeakInFlight is the highest of any one replica), the state of its input
// buffer, its rate, watermark and processing time, and each replica's own
// counters. The JSON names are those of the /status schema of package
// pipeline/monitor.
type VertexStats struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"` // "source", "map", "reduce" or "sink"
	Replicas int    `json:"replicas"`
	Counters        // the sums over the replicas
	// Pending counts the messages of the input buffer not yet committed:
	// waiting or in flight (0 for sources).
	Pending    int64      `json:"pending"`
	PerReplica []Counters `json:"per_replica"`
	// Watermark is the vertex's event-time watermark: for a source the
	// lowest watermark of its partitions (replicas), for other vertices the
	// lowest watermark its replicas read. Zero until every replica has one,
	// and when watermarks are off. It never decreases; once the input has
	// ended it is watermark.Max.
	Watermark time.Time `json:"watermark,omitzero"`

	// Partitions are the input buffer's partitions (nil for sources).
	Partitions []PartitionStats `json:"partitions,omitempty"`
	// Capacity is the input buffer's capacity in messages (0: unbounded,
	// or bounded by storage that enforces its own limits, JetStream, whose
	// usage this process cannot see); Used is how many messages hold it.
	Capacity int64 `json:"capacity"`
	Used     int64 `json:"used"`
	// Full reports a bounded input buffer with no room: its capacity is
	// used up, or a writer waits for room.
	Full bool `json:"full"`
	// Rate is how many messages per second the vertex read.
	Rate Rates `json:"rate"`
	// Latency is the processing time of the vertex's replicas: from the
	// read of a batch to the acknowledgement of its messages, observed
	// once per chunk of a batch (a source: per batch).
	Latency Histogram `json:"latency"`
	// Flush is the time the input buffer's flushes to disk took (nil
	// unless its storage flushes: mmap); WALCommit the time of the group
	// commits of a reduce's write-ahead log (nil without one).
	Flush     *Histogram `json:"flush,omitempty"`
	WALCommit *Histogram `json:"wal_commit,omitempty"`
	// StorageErrors counts the failed calls of the input buffer's remote
	// storage (JetStream) by operation: "publish", "fetch", ... Each may
	// have been retried.
	StorageErrors map[string]int64 `json:"storage_errors,omitempty"`
	// LastError is the last error a replica met: one it retried or dropped
	// a message for, or the one that failed it.
	LastError *ErrorRecord `json:"last_error,omitempty"`
}

// Counters are the message counts of one replica, or their sums over a
// vertex's replicas in [VertexStats]. Every count only grows during a run,
// except InFlight and OpenWindows.
type Counters struct {
	Read         int64 `json:"read"`           // messages read (from the input buffer or the source)
	Written      int64 `json:"written"`        // messages written to downstream buffers, or delivered by a sink (a reduce: results and late messages)
	Acked        int64 `json:"acked"`          // input messages acked (done, including dropped)
	Dropped      int64 `json:"dropped"`        // messages dropped, the sum of Drops
	Drops        Drops `json:"drops"`          // the dropped messages by reason
	Retried      int64 `json:"retried"`        // retries of UDF calls or sink writes, per message
	Fallback     int64 `json:"fallback"`       // messages delivered to the fallback sink
	Results      int64 `json:"results"`        // reduce: window results emitted (one per window, key and output of the reduce function)
	Late         int64 `json:"late"`           // reduce: messages whose windows were all closed (to the late stream, or dropped without one)
	InFlight     int64 `json:"in_flight"`      // messages read and not yet acked, now
	PeakInFlight int64 `json:"peak_in_flight"` // the highest InFlight seen
	OpenWindows  int64 `json:"open_windows"`   // reduce: windows open now, one per window and key
}

// Drops are dropped messages by reason.
type Drops struct {
	Tagged  int64 `json:"drop_tag"`          // tagged vertex.DropTag
	NoEdge  int64 `json:"no_edge"`           // matched no outgoing edge's condition
	Full    int64 `json:"buffer_full"`       // discarded: the destination buffer was full (DiscardWhenFull)
	Retries int64 `json:"retries_exhausted"` // the retry policy gave up (vertex.DropMessage)
	Late    int64 `json:"late"`              // a reduce's late messages, without a late stream
}

// countersOf is a forwarder snapshot as Counters.
func countersOf(s forwarder.Stats) Counters {
	return Counters{
		Read: s.Read, Written: s.Written, Acked: s.Acked, Dropped: s.Dropped,
		Drops:   Drops(s.Drops),
		Retried: s.Retried, Fallback: s.Fallback, Results: s.Results, Late: s.Late,
		InFlight: s.InFlight, PeakInFlight: s.PeakInFlight, OpenWindows: s.OpenWindows,
	}
}

// PartitionStats is one partition of a vertex's input buffer.
type PartitionStats struct {
	Partition int   `json:"partition"`
	Pending   int64 `json:"pending"` // messages the vertex has not committed
	// Replica is the replica reading the partition, -1 when no replica in
	// this process does.
	Replica int `json:"replica"`
}

// ErrorRecord is an error a vertex met.
type ErrorRecord struct {
	Time    time.Time `json:"time"`
	Replica int       `json:"replica"`
	Message string    `json:"message"`
}

// Stats returns the counters of every vertex, in the order they were
// added. It may be called at any time, also while Run runs; before Run
// every counter is zero.
func (p *Pipeline) Stats() []VertexStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.statsLocked(time.Now())
}

// statsLocked is Stats at now, with p.mu held.
func (p *Pipeline) statsLocked(now time.Time) []VertexStats {
	out := make([]VertexStats, 0, len(p.nodes))
	for i, n := range p.nodes {
		s := VertexStats{Name: n.name, Kind: n.kind.String(), Replicas: len(n.counters), Latency: emptyHistogram()}
		var sum forwarder.Stats
		for r, c := range n.counters {
			snap := c.Snapshot()
			s.PerReplica = append(s.PerReplica, countersOf(snap))
			sum = sum.Add(snap)
			if r == 0 {
				s.Latency = histogramOf(c.Latency())
			} else {
				s.Latency = s.Latency.add(histogramOf(c.Latency()))
			}
			if e := c.LastError(); e != nil && (s.LastError == nil || e.Time.After(s.LastError.Time)) {
				s.LastError = &ErrorRecord{Time: e.Time, Replica: r, Message: e.Message}
			}
		}
		s.Counters = countersOf(sum)
		if n.wm != nil {
			s.Watermark = n.wm.watermark()
		}
		if n.kind != kindSource {
			b := n.final
			if p.live && n.in != nil {
				b = n.in.state()
			}
			s.fillBuffer(b)
		}
		s.Rate = p.rates.rates(i, now, s.Read)
		n.obs.fill(&s)
		out = append(out, s)
	}
	return out
}

// fillBuffer sets what s shows of the input buffer in state b.
func (s *VertexStats) fillBuffer(b bufferState) {
	s.Capacity, s.Used = b.capacity, b.used
	s.Full = b.capacity > 0 && (b.used >= b.capacity || b.waiting > 0)
	for p, pending := range b.partitions {
		s.Pending += pending
		r := -1
		if p < len(b.readers) {
			r = b.readers[p]
		}
		s.Partitions = append(s.Partitions, PartitionStats{Partition: p, Pending: pending, Replica: r})
	}
}

// bufferState is a snapshot of an input buffer.
type bufferState struct {
	partitions []int64 // pending per partition
	readers    []int   // per partition, the replica of this process reading it (-1: none)
	used       int64   // messages holding capacity
	capacity   int64   // 0: unbounded (or bounded by the storage)
	waiting    int     // writers waiting for room
}

// pending is the sum over the partitions.
func (b bufferState) pending() int64 {
	var n int64
	for _, p := range b.partitions {
		n += p
	}
	return n
}
