package pipeline

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/forwarder"
	"github.com/runnel-dev/runnel/watermark"
)

// vertexWatermarks are the watermark parts of one vertex's replicas, built
// for one Run: a publisher per replica that writes (sources and maps), a
// fetcher per replica that reads (maps and sinks) and, for a source, the
// watermark of each source partition (replica).
type vertexWatermarks struct {
	pubs     []*replicaPublisher  // per replica; nil for a sink
	fetchers []*watermark.Fetcher // per replica; nil for a source
	source   *watermark.Source    // sources only
	replicas int                  // the vertex's replicas
	upstream int                  // upstream replicas each fetcher waits for
	interval time.Duration        // forwarder.Hooks.IdleInterval
}

// hooks are replica r's forwarder hooks.
func (vw *vertexWatermarks) hooks(r int) forwarder.Hooks {
	h := forwarder.Hooks{IdleInterval: vw.interval}
	if vw.pubs != nil {
		h.Publisher = vw.pubs[r]
	}
	if vw.fetchers != nil {
		h.Fetcher = vw.fetchers[r]
	}
	if vw.source != nil {
		h.Source = vw.source
	}
	return h
}

// watermark is the vertex's watermark: the lowest of its replicas' (the
// source watermark of each source partition, or what each reader
// fetched; for a source reading several partitions, the lowest of
// theirs). A replica without a watermark yet makes it zero, so it never
// decreases.
func (vw *vertexWatermarks) watermark() time.Time {
	var low time.Time
	for r := range vw.replicas {
		var w time.Time
		switch {
		case vw.source != nil && vw.pubs[r] == nil, vw.source == nil && vw.fetchers[r] == nil:
			continue // a replica another process runs
		case vw.source != nil:
			w = vw.source.Watermark(r)
		default:
			w = vw.fetchers[r].Watermark()
		}
		if w.IsZero() {
			return time.Time{}
		}
		if r == 0 || w.Before(low) {
			low = w
		}
	}
	return low
}

// startWatermarks builds and starts the watermark parts of every vertex:
// publishers first (their first heartbeat is in the store when Start
// returns), then fetchers, which wait for their upstream replicas. On
// error, what was started is stopped.
func (p *Pipeline) startWatermarks(rt *runtime) error {
	c := rt.cfg.wm
	store := c.Store
	if store == nil {
		s, err := rt.cfg.storage.Watermarks(p.name)
		if err != nil {
			return fmt.Errorf("pipeline %q: watermark store of %s: %w", p.name, rt.cfg.storage, err)
		}
		store = s
	}
	if store == nil {
		store = watermark.NewMemStore()
	}
	interval := c.IdleInterval
	built := make([]*vertexWatermarks, len(p.nodes))
	for i, n := range p.nodes {
		if !rt.cfg.sub.runsAny(n) {
			continue
		}
		vw, err := newVertexWatermarks(rt, store, p.name, n)
		if err != nil {
			p.stopWatermarks(rt, built)
			return &VertexError{Vertex: n.name, Err: err}
		}
		vw.interval = interval
		built[i] = vw
	}
	for i, vw := range built {
		if vw == nil {
			continue
		}
		for _, pub := range vw.pubs {
			if pub == nil {
				continue
			}
			if err := pub.pub.Start(rt.hard); err != nil {
				p.stopWatermarks(rt, built)
				return &VertexError{Vertex: p.nodes[i].name, Err: err}
			}
		}
	}
	for i, vw := range built {
		if vw == nil {
			continue
		}
		for _, f := range vw.fetchers {
			if f == nil {
				continue
			}
			err := f.Start(rt.hard)
			// On shared storage upstream replicas run in other processes
			// and start when they start: each replica's fetcher holds its
			// watermark until every one of them is heard of, without
			// holding the run's start.
			if err == nil && !rt.cfg.storage.Shared() {
				// Every publisher heartbeated above, so this returns at
				// once; it is what keeps a reader from computing watermarks
				// before its upstream is known.
				err = f.WaitForProcessors(rt.soft, vw.upstream)
			}
			if err != nil {
				p.stopWatermarks(rt, built)
				return &VertexError{Vertex: p.nodes[i].name, Err: err}
			}
		}
	}
	p.mu.Lock()
	for i, n := range p.nodes {
		n.wm = built[i]
	}
	p.mu.Unlock()
	return nil
}

// newVertexWatermarks builds the publishers, fetchers and source of n.
func newVertexWatermarks(rt *runtime, store watermark.Store, pipeline string, n *node) (*vertexWatermarks, error) {
	c := rt.cfg.wm
	replicas := n.cfg.Replicas
	vw := &vertexWatermarks{replicas: replicas}
	if n.kind == kindSource {
		// One source partition per replica; a source that reads several
		// partitions (readParts) has a watermark per partition, shared by
		// its replicas.
		src, err := watermark.NewSource(watermark.SourceConfig{Partitions: replicas, Inputs: n.readParts, MaxDelay: c.MaxDelay,
			IdleThreshold: c.IdleThreshold, StepInterval: c.IdleStep, IncrementBy: c.IdleIncrement, Clock: c.Clock})
		if err != nil {
			return nil, err
		}
		vw.source = src
	}
	if len(n.outs) > 0 {
		vw.pubs = make([]*replicaPublisher, replicas)
		for r := range replicas {
			if !rt.cfg.sub.runs(n, r) {
				continue
			}
			rp, err := newReplicaPublisher(rt, store, pipeline, n, r)
			if err != nil {
				return nil, err
			}
			vw.pubs[r] = rp
		}
	}
	if n.kind == kindSource {
		return vw, nil
	}
	var edges []string
	vw.upstream = -1
	// On shared storage each edge's watermark waits for every upstream
	// replica of this run by name, and a dead one holds it: they run in
	// other processes, start in any order and are restarted in place, and
	// a replica killed and restarted writes again what it had not
	// committed, with its old event times (see watermark.FetcherConfig).
	var procs map[string][]string
	if rt.cfg.storage.Shared() {
		procs = map[string][]string{}
	}
	for _, part := range n.ins {
		b, err := watermark.EdgeBucket(pipeline, part.from.name, n.name)
		if err != nil {
			return nil, err
		}
		edges = append(edges, b)
		if procs != nil {
			for i := range part.from.cfg.Replicas {
				name, err := rt.processor(part.from.name, i)
				if err != nil {
					return nil, err
				}
				procs[b] = append(procs[b], name)
			}
		}
		if vw.upstream < 0 || part.from.cfg.Replicas < vw.upstream {
			vw.upstream = part.from.cfg.Replicas
		}
	}
	vw.fetchers = make([]*watermark.Fetcher, replicas)
	for r := range replicas {
		if !rt.cfg.sub.runs(n, r) {
			continue
		}
		f, err := watermark.NewFetcher(store, watermark.FetcherConfig{
			Edges: edges, Processors: procs, Partitions: n.in.assigned(r), HeartbeatTimeout: c.HeartbeatTimeout,
			Accept: rt.ofThisRun,
			Clock:  c.Clock, Logger: rt.log.With(zap.String("vertex", n.name), zap.Int("replica", r)),
			// A watch the store could not keep up (a deleted bucket, a
			// closed connection, a permission) leaves the vertex's
			// watermark frozen: fail the run with it rather than go on
			// with windows that never close.
			OnFailure: func(err error) { rt.fail(&VertexError{Vertex: n.name, Err: err}) },
		})
		if err != nil {
			return nil, err
		}
		vw.fetchers[r] = f
	}
	return vw, nil
}

// processor is the watermark processor name of replica r of vertex in this
// run: {vertex}-{r}/{run}. The run tells this run's WMBs and heartbeats
// from those an earlier run left in a store that outlives it (JetStream
// KV): an earlier run's final WMB would otherwise end this run's
// watermark at once, and its silent processors hold it.
func (rt *runtime) processor(vertex string, r int) (string, error) {
	name, err := watermark.ProcessorName(vertex, r)
	if err != nil {
		return "", err
	}
	return name + "/" + rt.run, nil
}

// ofThisRun reports whether a watermark processor is of this run (see
// processor): the fetchers of storage one process owns ignore the others.
func (rt *runtime) ofThisRun(processor string) bool {
	return strings.HasSuffix(processor, "/"+rt.run)
}

// watermarkStopTimeout bounds how long the end of a run waits for the
// store to take the publishers' last WMBs (the final ones among them) and
// heartbeat deletions: a store that is down must not hold Run.
const watermarkStopTimeout = 10 * time.Second

// stopWatermarks stops every publisher (flushing its WMBs and deleting its
// heartbeat) and every fetcher of built, waiting for the store at most
// watermarkStopTimeout in all. Stop errors are logged: the pipeline's
// outcome does not depend on them.
func (p *Pipeline) stopWatermarks(rt *runtime, built []*vertexWatermarks) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rt.hard), watermarkStopTimeout)
	defer cancel()
	for _, vw := range built {
		if vw == nil {
			continue
		}
		for _, pub := range vw.pubs {
			if pub == nil {
				continue
			}
			if err := pub.pub.Stop(ctx); err != nil {
				rt.log.Warn("watermark publisher stop", zap.Error(err))
			}
		}
		for _, f := range vw.fetchers {
			if f != nil {
				f.Stop()
			}
		}
	}
}

// watermarks returns the watermark parts of every vertex (nil entries when
// off).
func (p *Pipeline) watermarks() []*vertexWatermarks {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*vertexWatermarks, len(p.nodes))
	for i, n := range p.nodes {
		out[i] = n.wm
	}
	return out
}

// replicaPublisher adapts a watermark.Publisher to the writer of one
// replica: it implements forwarder.WatermarkPublisher,
// forwarder.IdlePublisher and forwarder.EndPublisher.
type replicaPublisher struct {
	pub   *watermark.Publisher
	log   *zap.Logger
	edges map[string]*publishedEdge // by destination vertex
	order []*publishedEdge          // the same, in a stable order
}

// publishedEdge is one outgoing edge of a replica.
type publishedEdge struct {
	to, bucket string
	partitions int
	idle       *watermark.IdleManager
	// published is the highest watermark published to the edge, Unix ns
	// (0: none yet), for Status.
	published atomic.Int64
}

func newReplicaPublisher(rt *runtime, store watermark.Store, pipeline string, n *node, r int) (*replicaPublisher, error) {
	c := rt.cfg.wm
	name, err := rt.processor(n.name, r)
	if err != nil {
		return nil, err
	}
	rp := &replicaPublisher{log: rt.log.With(zap.String("processor", name)), edges: map[string]*publishedEdge{}}
	var pe []watermark.PublisherEdge
	for _, e := range n.outs {
		b, err := watermark.EdgeBucket(pipeline, n.name, e.to.name)
		if err != nil {
			return nil, err
		}
		idle, err := watermark.NewIdleManager(e.to.cfg.Partitions, c.PartitionIdleThreshold, c.Clock)
		if err != nil {
			return nil, err
		}
		ed := &publishedEdge{to: e.to.name, bucket: b, partitions: e.to.cfg.Partitions, idle: idle}
		rp.edges[e.to.name] = ed
		rp.order = append(rp.order, ed)
		pe = append(pe, watermark.PublisherEdge{Bucket: b, Partitions: e.to.cfg.Partitions})
	}
	// No InFlight cap: the forwarder passes PublishIdle the replica's
	// watermark, which already is the lowest in-flight watermark when
	// anything is in flight; and what the reader fetches later never goes
	// below it (fetched watermarks never decrease).
	rp.pub, err = watermark.NewPublisher(store, watermark.PublisherConfig{
		Processor: name, Edges: pe, Throttle: c.Throttle, HeartbeatInterval: c.HeartbeatInterval,
		Clock: c.Clock, Logger: rp.log,
	})
	if err != nil {
		return nil, err
	}
	return rp, nil
}

// Publish implements forwarder.WatermarkPublisher. It never waits for the
// store (the publisher's goroutine puts the WMB, retrying while the store
// fails); an error is a bad argument, logged.
func (rp *replicaPublisher) Publish(to string, partition int, offset int64, wm time.Time) {
	e := rp.edges[to]
	if e == nil {
		return // cannot happen: the writer writes only to rp's edges
	}
	_ = e.idle.Wrote(partition) // partition is in range: the writer wrote it
	if wm.IsZero() {
		return // nothing to say yet
	}
	if err := rp.pub.Publish(e.bucket, partition, offset, wm); err != nil {
		rp.log.Warn("watermark publish", zap.String("edge", e.bucket), zap.Int("partition", partition), zap.Error(err))
		return
	}
	e.notePublished(wm)
}

// PublishEnd implements forwarder.EndPublisher: the replica ended its
// output on partition with an end-of-stream message at offset, and its
// final WMB there is watermark.Max. It never waits for the store: the
// publisher's goroutine puts the WMB, retrying while the store fails, and
// its Stop at the end of the run puts it if the goroutine could not (the
// readers end either way: they learn of the end from the message).
func (rp *replicaPublisher) PublishEnd(to string, partition int, offset int64) {
	e := rp.edges[to]
	if e == nil {
		return // cannot happen: the writer ends only rp's edges
	}
	if err := rp.pub.PublishEnd(e.bucket, partition, offset); err != nil {
		rp.log.Warn("final watermark publish", zap.String("edge", e.bucket), zap.Int("partition", partition), zap.Error(err))
		return
	}
	e.notePublished(watermark.Max)
}

// Idle implements forwarder.IdlePublisher: each partition idle for the
// threshold gets one control message, then idle WMBs at its offset. Only
// a failed control write is returned (it fails the pipeline, as any write
// does).
func (rp *replicaPublisher) Idle(ctx context.Context, wm time.Time, write forwarder.ControlWriter) error {
	for _, e := range rp.order {
		for part := range e.partitions {
			step, err := e.idle.Next(part)
			if err != nil {
				return err
			}
			switch step.Action {
			case watermark.IdleWriteControl:
				off, err := write(ctx, e.to, part)
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return fmt.Errorf("pipeline: idle control message to %q partition %d: %w", e.to, part, err)
				}
				if err := e.idle.ControlWritten(part, off); err != nil {
					return err
				}
			case watermark.IdlePublish:
				if wm.IsZero() {
					continue
				}
				if err := rp.pub.PublishIdle(e.bucket, part, step.Offset, wm); err != nil {
					rp.log.Warn("idle watermark publish", zap.String("edge", e.bucket), zap.Int("partition", part), zap.Error(err))
				} else {
					e.notePublished(wm)
				}
			}
		}
	}
	return nil
}
