package pipeline

import (
	"maps"
	"sync"
	"time"

	"github.com/runnel-dev/runnel/internal/metric"
)

// Status is a snapshot of a pipeline: its state, every vertex's Stats and
// every edge. Package pipeline/monitor serves it as /status (its package
// doc has the JSON schema, the names of the json tags) and draws it.
type Status struct {
	Pipeline string `json:"pipeline"`
	// State is "new" before Run, "running" while it runs, "stopped" after.
	State   string    `json:"state"`
	Run     string    `json:"run,omitempty"`    // the run's identity (see Storage.JoinRun)
	Storage string    `json:"storage"`          // the storage, as its String says
	Started time.Time `json:"started,omitzero"` // when Run started
	Time    time.Time `json:"time"`             // when the snapshot was taken
	// Vertices are in the order they were added; Edges in the order of
	// their destinations, then of their origins in the destination's
	// input.
	Vertices []VertexStats `json:"vertices"`
	Edges    []EdgeStats   `json:"edges"`
	Error    string        `json:"error,omitempty"` // the run's first error
}

// EdgeStats is one edge: the messages From writes into To's input buffer.
type EdgeStats struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Condition is the tag condition of a Where (empty: every message);
	// Late marks the late-data stream of a reduce, Discard an edge that
	// drops what does not fit.
	Condition string `json:"condition,omitempty"`
	Late      bool   `json:"late,omitempty"`
	Discard   bool   `json:"discard,omitempty"`
	Written   int64  `json:"written"`   // messages written to the edge
	Discarded int64  `json:"discarded"` // messages it dropped: To's buffer was full
	Rate      Rates  `json:"rate"`      // of Written, per second
	// Watermark is the lowest of the watermarks From's replicas published
	// with their writes to the edge: what To reads the edge with. Zero
	// until each replica in this process published one.
	Watermark time.Time `json:"watermark,omitzero"`
	// Full reports that To's input buffer has no room (VertexStats.Full).
	Full bool `json:"full"`
}

// Status returns a snapshot of the pipeline. It may be called at any
// time, from any goroutine; the graph is the one built so far.
func (p *Pipeline) Status() Status {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Status{Pipeline: p.name, State: "new", Run: p.run, Storage: p.storage, Started: p.started, Time: now}
	switch {
	case p.live:
		st.State = "running"
	case p.ran:
		st.State = "stopped"
	}
	if p.last != nil {
		if err := p.last.err(); err != nil {
			st.Error = err.Error()
		}
	}
	st.Vertices = p.statsLocked(now)
	full := map[*node]bool{}
	for i, n := range p.nodes {
		full[n] = st.Vertices[i].Full
	}
	for _, e := range p.edgesLocked() {
		es := EdgeStats{From: e.from.name, To: e.to.name, Late: e.late, Discard: e.discard, Full: full[e.to]}
		if !p.ran || p.resolved { // else Run is resolving the options
			es.Discard = es.Discard || e.to.cfg.DiscardWhenFull
		}
		if e.when != nil {
			es.Condition = e.when.String()
		}
		if e.counters != nil {
			c := e.counters.Snapshot()
			es.Written, es.Discarded = c.Written, c.Discarded
			es.Rate = p.rates.rates(len(p.nodes)+e.index, now, c.Written)
		}
		if e.from.wm != nil {
			es.Watermark = e.from.wm.edgeWatermark(e.to.name)
		}
		st.Edges = append(st.Edges, es)
	}
	return st
}

// edge is one edge of the graph as built, with its counters once Run
// validated it.
type edge struct {
	from, to *node
	outEdge
	index int // among the edges with counters: its series in the rates
}

// edgesLocked returns the edges of the graph (p.mu held): from every
// vertex's inputs, in vertex order, without those of refused vertices;
// with their counters once Run resolved the graph.
func (p *Pipeline) edgesLocked() []edge {
	var out []edge
	counted := 0
	ready := !p.ran || p.resolved // nothing writes the outs
	for _, n := range p.nodes {
		if n.refused {
			continue
		}
		for _, part := range n.ins {
			if part.from == nil || part.from.refused || p.names[part.from.name] != part.from {
				continue
			}
			e := edge{from: part.from, to: n, outEdge: outEdge{to: n, when: part.when, discard: part.discard, late: part.late}, index: -1}
			for _, o := range part.from.outs {
				if !ready {
					break
				}
				if o.to == n {
					e.counters, e.index = o.counters, counted
					counted++
					break
				}
			}
			out = append(out, e)
		}
	}
	return out
}

// edgeCounts are the written counts of the edges with counters, in
// edgesLocked's order: the edge series of the rates.
func (p *Pipeline) edgeCounts(dst []int64) []int64 {
	for _, e := range p.edgesLocked() {
		if e.counters != nil {
			dst = append(dst, e.counters.Snapshot().Written)
		}
	}
	return dst
}

// observed is what a vertex's storage reports (BufferEvents, the WAL's
// commits) and the error that failed one of its replicas.
type observed struct {
	flush     metric.Histogram
	walCommit metric.Histogram
	mu        sync.Mutex // guards the fields below: error paths only
	errs      map[string]int64
	failed    *ErrorRecord
}

func newObserved() *observed { return &observed{} }

// Flushed implements BufferEvents.
func (o *observed) Flushed(d time.Duration) { o.flush.Observe(d) }

// Failed implements BufferEvents.
func (o *observed) Failed(op string, _ error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.errs == nil {
		o.errs = map[string]int64{}
	}
	o.errs[op]++
}

// replicaFailed records the error that failed replica r.
func (o *observed) replicaFailed(r int, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failed = &ErrorRecord{Time: time.Now(), Replica: r, Message: err.Error()}
}

// fill sets what o holds in s.
func (o *observed) fill(s *VertexStats) {
	if f := o.flush.Snapshot(); f.Count > 0 {
		h := histogramOf(f)
		s.Flush = &h
	}
	if c := o.walCommit.Snapshot(); c.Count > 0 {
		h := histogramOf(c)
		s.WALCommit = &h
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.errs) > 0 {
		s.StorageErrors = maps.Clone(o.errs)
	}
	if o.failed != nil && (s.LastError == nil || !o.failed.Time.Before(s.LastError.Time)) {
		e := *o.failed
		s.LastError = &e
	}
}

// edgeWatermark is the lowest watermark the replicas of this process
// published to the edge into vertex to (zero until each published one).
func (vw *vertexWatermarks) edgeWatermark(to string) time.Time {
	var low time.Time
	for _, pub := range vw.pubs {
		if pub == nil {
			continue // a replica another process runs
		}
		e := pub.edges[to]
		if e == nil {
			continue
		}
		ns := e.published.Load()
		if ns == 0 {
			return time.Time{}
		}
		if w := time.Unix(0, ns); low.IsZero() || w.Before(low) {
			low = w
		}
	}
	return low
}

// notePublished raises the edge's published watermark to wm: one
// compare-and-swap per published batch.
func (e *publishedEdge) notePublished(wm time.Time) {
	ns := wm.UnixNano()
	for {
		cur := e.published.Load()
		if ns <= cur || e.published.CompareAndSwap(cur, ns) {
			return
		}
	}
}
