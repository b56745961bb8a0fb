package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/forwarder"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/watermark"
)

// runtime is the state of one Run.
type runtime struct {
	cfg  config
	log  *zap.Logger
	soft context.Context // ends: sources stop reading and the pipeline drains
	hard context.Context // ends: everything stops at once (an error)

	softCancel, hardCancel context.CancelFunc
	run                    string // this run's id, in end-of-stream messages

	// stops are the read stops of the vertices on shared storage, and
	// replicaDone counts their replicas down (stopInOrder).
	stops       map[*node]context.Context
	replicaDone func(n *node)

	mu        sync.Mutex
	first     error
	abandoned error // the replicas Run returned without (*AbandonedError)
}

// fail records err if it is the first error and stops everything.
func (rt *runtime) fail(err error) {
	rt.mu.Lock()
	if rt.first == nil {
		rt.first = err
		rt.log.Error("pipeline failing", zap.Error(err))
	}
	rt.mu.Unlock()
	rt.hardCancel()
	rt.softCancel()
}

func (rt *runtime) err() error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return errors.Join(rt.first, rt.abandoned)
}

// abandon records the replicas Run returns without.
func (rt *runtime) abandon(err error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.abandoned = err
}

// replicaConfig is what the forwarder of replica r of n needs.
func (rt *runtime) replicaConfig(n *node, r int) forwarder.Config {
	c := forwarder.Config{
		Vertex: n.name, Replica: r, Options: n.cfg, Counters: n.counters[r], Failures: n.failures, Drops: n.drops,
		Logger: rt.log.With(zap.String("vertex", n.name), zap.Int("replica", r)),
		Run:    rt.run,
		// On shared storage a stop ends no stream (subset.go).
		KeepOpenOnStop: rt.cfg.storage.Shared(),
	}
	switch {
	case rt.cfg.hooks != nil:
		c.Hooks = rt.cfg.hooks(n.name, r)
	case n.wm != nil:
		c.Hooks = n.wm.hooks(r)
	}
	return c
}

// readStop is the context whose end stops n's readers (map, reduce and
// sink replicas) without ending their output. On storage one process owns
// they stop only when the pipeline fails (rt.hard): a cancelled run drains
// by the sources' ends of stream. On shared storage they stop once ctx
// ended and every vertex upstream of n that runs in this process has
// stopped (subset.go): what this process's vertices had read goes on
// through its other vertices, and none of them is left writing into a
// full buffer whose reader stopped.
func (rt *runtime) readStop(n *node) context.Context {
	if ctx := rt.stops[n]; ctx != nil {
		return ctx
	}
	return rt.hard
}

// stopInOrder makes the read stops of every vertex this process runs on
// shared storage (readStop), and returns a function that waits for their
// goroutines once every replica has ended.
func (p *Pipeline) stopInOrder(rt *runtime) (wait func()) {
	if !rt.cfg.storage.Shared() {
		return func() {}
	}
	rt.stops = map[*node]context.Context{}
	done := map[*node]chan struct{}{}
	left := map[*node]*atomic.Int32{}
	for _, n := range p.nodes {
		if c := rt.cfg.sub.replicasOf(n); c > 0 {
			done[n], left[n] = make(chan struct{}), new(atomic.Int32)
			left[n].Store(int32(c))
		}
	}
	rt.replicaDone = func(n *node) {
		if left[n].Add(-1) == 0 {
			close(done[n])
		}
	}
	var wg sync.WaitGroup
	ended := make(chan struct{})
	for _, n := range p.nodes {
		if done[n] == nil || n.kind == kindSource {
			continue
		}
		ctx, cancel := context.WithCancel(rt.hard)
		rt.stops[n] = ctx
		wg.Go(func() {
			defer cancel()
			select {
			case <-rt.soft.Done():
			case <-ended:
				return
			}
			for _, part := range n.ins {
				if ch := done[part.from]; ch != nil {
					select {
					case <-ch:
					case <-ended:
						return
					}
				}
			}
		})
	}
	return func() { close(ended); wg.Wait() }
}

// Run validates the pipeline, opens its buffers and runs every replica of
// every vertex (or the part opts choose, see Only) until the sources are exhausted or ctx is cancelled, and the
// pipeline is drained. A source replica that is exhausted, or stopped by
// ctx, ends its output with an end-of-stream message on every partition of
// every edge; a vertex replica ends once it has read the end of every
// upstream replica on every partition it reads and everything it read is
// acked, and then ends its own output the same way, down to the sinks (see
// package forwarder). The ends of exhausted sources carry the final
// watermark (watermark.Max), which every vertex then reaches; a cancelled
// pipeline drains the same way without moving watermarks. It returns nil
// then, or the first error (which stops everything at once, leaving unacked
// messages uncommitted). A pipeline runs once. A replica's failure is a
// *vertex.ProcessError naming the vertex, the replica and the message; it
// matches vertex.ErrRetriesExhausted when the vertex's retry policy gave
// up.
//
// User functions, sources and sinks receive a context that ends when the
// pipeline stops at once (an error, the DrainTimeout, Stop); they must
// return then. Run waits AbandonAfter for those that do not, then returns
// without them (*AbandonedError), leaving their sources and sinks open.
// Drain drains as cancelling ctx does, with a deadline of its own, and Stop
// stops at once (a second interrupt).
//
// On shared storage (Storage.Shared) a cancelled ctx stops instead of
// draining to the end: every vertex finishes and acknowledges what it read
// and ends nothing, and the next Run resumes (see Only).
func (p *Pipeline) Run(ctx context.Context, opts ...RunOption) error {
	p.mu.Lock()
	if p.ran {
		p.mu.Unlock()
		return ErrRunning
	}
	p.ran = true
	p.mu.Unlock()
	defer close(p.done) // Drain's wait
	cfg, err := p.validate()
	p.mu.Lock()
	p.resolved = true
	p.mu.Unlock()
	if err != nil {
		return err
	}
	var sub subset
	for _, o := range opts {
		if o != nil {
			o(&sub)
		}
	}
	if cfg.sub, err = sub.resolve(p, &cfg); err != nil {
		return err
	}
	// End-of-stream messages carry the run, so that ends a killed run left
	// in durable buffers do not end this run's readers (forwarder.Config.Run);
	// every process of a run on shared storage gets the same one.
	joined, err := cfg.storage.JoinRun(p.name)
	if err != nil {
		return fmt.Errorf("pipeline %q: join the run on %s: %w", p.name, cfg.storage, err)
	}
	run := joined.ID
	if err := p.open(&cfg); err != nil {
		return err
	}
	rt := &runtime{cfg: cfg, log: cfg.logger.With(zap.String("pipeline", p.name)), run: run}
	p.mu.Lock()
	p.last, p.run, p.storage, p.started = rt, run, cfg.storage.String(), time.Now()
	p.mu.Unlock()
	rt.soft, rt.softCancel = context.WithCancel(ctx)
	// Writes and acks outlive ctx: a cancelled pipeline still drains.
	rt.hard, rt.hardCancel = context.WithCancel(context.WithoutCancel(ctx))
	defer rt.softCancel()
	defer rt.hardCancel()
	p.attach(rt) // a Stop or Drain reaches rt from here
	defer p.detach()
	starting := []zap.Field{zap.Int("vertices", len(p.nodes)), zap.String("run", run), zap.Stringer("storage", cfg.storage)}
	if joined.After != "" {
		// A new run: a process restarted after its run ended waits here
		// for the new run's upstream, and this says why.
		starting = append(starting, zap.String("after run", joined.After), zap.String("new run", "the previous run ended: every sink replica ended it"))
	}
	rt.log.Info("pipeline starting", starting...)
	if cfg.storage.Durable() {
		p.logPositions(rt.log)
	}
	if err := p.prepare(rt); err != nil {
		return errors.Join(rt.err(), err, p.close())
	}
	if cfg.hooks == nil && !cfg.wm.Disabled {
		if err := p.startWatermarks(rt); err != nil {
			p.release()
			// A Stop as the watermarks start fails them with its cancel:
			// rt.err says why.
			return errors.Join(rt.err(), err, p.close())
		}
		defer p.stopWatermarks(rt, p.watermarks())
	}
	stopRates := p.sampleRates()
	p.start(rt)
	stopRates()
	for _, n := range p.nodes {
		n.drops.Flush(rt.log, zap.String("vertex", n.name)) // what the rate limit held back
		n.failures.Flush(rt.log, zap.String("vertex", n.name))
	}
	err = errors.Join(rt.err(), p.close())
	rt.log.Info("pipeline stopped", zap.Error(err))
	return err
}

// logPositions logs where each vertex this process runs resumes its input
// buffer, on durable storage: its commit per partition and the backlog
// after it (what a restart reads again or for the first time), and how
// long opening the buffer (its storage's recovery, the consumers' commits)
// and reading those positions took.
func (p *Pipeline) logPositions(log *zap.Logger) {
	for _, n := range p.nodes {
		if n.in == nil || n.kind == kindSource {
			continue
		}
		began := time.Now()
		if pos := n.in.positions(); len(pos) > 0 {
			log.Info("vertex resumes its input buffer", zap.String("vertex", n.name), zap.Strings("partitions", pos),
				zap.Duration("took", n.opened+time.Since(began)))
		}
	}
}

// open creates every input buffer and the counters.
func (p *Pipeline) open(c *config) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range p.nodes {
		n.counters = make([]*forwarder.Counters, n.cfg.Replicas)
		n.failures, n.drops = &forwarder.FailureLog{}, &forwarder.DropLog{}
		for r := range n.counters {
			n.counters[r] = new(forwarder.Counters)
		}
		if n.kind == kindSource || !c.sub.runsAny(n) && !c.sub.writesTo(n) {
			continue
		}
		began := time.Now()
		b, err := n.open(c, p, n)
		if err != nil {
			return errors.Join(&VertexError{Vertex: n.name, Err: err}, p.closeBuffers())
		}
		n.in, n.opened = b, time.Since(began)
	}
	if err := p.claimSources(c); err != nil {
		return errors.Join(err, p.closeBuffers())
	}
	for _, n := range p.nodes {
		if n.resume == nil || !c.sub.runsAny(n) {
			continue
		}
		if err := n.resume(c, p, n); err != nil {
			return errors.Join(&VertexError{Vertex: n.name, Err: err}, p.closeBuffers())
		}
	}
	p.live = true
	return nil
}

// prepare runs every vertex's prepare step; if one fails, it releases
// what the others opened and returns every failure, naming its vertex.
func (p *Pipeline) prepare(rt *runtime) error {
	var errs []error
	for _, n := range p.nodes {
		if n.prepare != nil && rt.cfg.sub.runsAny(n) {
			if err := n.prepare(rt, n); err != nil {
				errs = append(errs, &VertexError{Vertex: n.name, Err: err})
			}
		}
	}
	if len(errs) > 0 {
		p.release()
	}
	return errors.Join(errs...)
}

// release undoes what prepare opened, for a run that does not start.
func (p *Pipeline) release() {
	for _, n := range p.nodes {
		if n.release != nil {
			n.release()
		}
	}
}

// claimSources claims, on shared storage, every source replica this
// process runs, in the storage of the source's first output buffer (group
// "{vertex}/source-{replica}", partition 0): readers claim their partitions
// as they join their group, and a source has no input to claim, so two
// processes would otherwise both run it.
func (p *Pipeline) claimSources(c *config) error {
	if !c.storage.Shared() {
		return nil
	}
	var errs []error
	for _, n := range p.nodes {
		if n.kind != kindSource || len(n.outs) == 0 {
			continue
		}
		for r := range n.cfg.Replicas {
			if !c.sub.runs(n, r) {
				continue
			}
			lease, err := n.outs[0].to.in.claimOf(fmt.Sprintf("%s/source-%d", n.name, r), []int{0})
			if err != nil {
				if errors.Is(err, isb.ErrGroupInUse) {
					err = &ReplicaError{Vertex: n.name, Replica: r, Err: err}
				}
				errs = append(errs, err)
				continue
			}
			n.leases = append(n.leases, lease)
		}
	}
	return errors.Join(errs...)
}

// watchLeases fails the run when a claim this process holds is lost (it
// expired while the storage was unreachable, and another process may run
// the replica now), until finished is closed.
func (p *Pipeline) watchLeases(rt *runtime, finished <-chan struct{}) {
	var wg sync.WaitGroup
	for _, n := range p.nodes {
		for _, l := range n.leases {
			wg.Go(func() {
				select {
				case <-l.Lost():
					rt.fail(&VertexError{Vertex: n.name, Err: isb.ErrClaimLost})
				case <-finished:
				}
			})
		}
	}
	wg.Wait()
}

// closeBuffers closes the buffers open so far, after a failed open, and
// releases the sources' claims.
func (p *Pipeline) closeBuffers() error {
	var errs []error
	for _, m := range p.nodes {
		for _, l := range m.leases {
			errs = append(errs, l.Release())
		}
		m.leases = nil
	}
	for _, m := range p.nodes {
		if m.in != nil {
			errs = append(errs, m.in.close())
			m.in = nil
		}
	}
	return errors.Join(errs...)
}

// start runs every vertex and returns when all have stopped. Nothing here
// decides when a vertex stops: each replica ends by itself when its input
// ended (end-of-stream messages through the buffers), so the same holds when
// the vertices run in different processes.
func (p *Pipeline) start(rt *runtime) {
	var replicas sync.WaitGroup
	var running replicaSet
	waitStops := p.stopInOrder(rt)
	defer waitStops()
	for _, n := range p.nodes {
		for r := range n.cfg.Replicas {
			if !rt.cfg.sub.runs(n, r) {
				continue
			}
			returned := running.add(n, r)
			replicas.Go(func() {
				defer returned()
				if rt.replicaDone != nil {
					defer rt.replicaDone(n)
				}
				if err := n.run(rt, n, r); err != nil {
					n.obs.replicaFailed(r, err)
					rt.fail(err)
					return
				}
				if n.kind == kindSink && rt.soft.Err() == nil {
					rt.endRun(p, n, r)
				}
			})
		}
	}
	finished := make(chan struct{})
	var deadline sync.WaitGroup
	deadline.Go(func() { rt.drainDeadline(finished) })
	deadline.Go(func() { p.watchLeases(rt, finished) })
	allReturned := make(chan struct{})
	go func() {
		replicas.Wait()
		close(allReturned)
	}()
	p.awaitReplicas(rt, &running, allReturned)
	close(finished)
	deadline.Wait()
}

// endRun records in the storage that sink replica r of n ended by its end
// of stream, so that once every sink replica did, the next Run is a new
// run (Storage.EndRun).
func (rt *runtime) endRun(p *Pipeline, n *node, r int) {
	var all []string
	for _, m := range p.nodes {
		if m.kind == kindSink {
			for i := range m.cfg.Replicas {
				all = append(all, m.name+"/"+strconv.Itoa(i))
			}
		}
	}
	if err := rt.cfg.storage.EndRun(p.name, rt.run, n.name+"/"+strconv.Itoa(r), all); err != nil {
		rt.fail(&VertexError{Vertex: n.name, Err: fmt.Errorf("record the end of run %s: %w", rt.run, err)})
	}
}

// readerInput is replica r's input: its side of n's buffer, and the
// processors that end each partition (every replica of every vertex feeding
// n; validate refuses a second edge from the same vertex). On shared
// storage the final WMBs in the watermark store also say which of them
// ended already (forwarder.Input.Ended).
func readerInput[T any](rt *runtime, n *node, r int) forwarder.Input[T] {
	in := inputOf[T](n, r)
	for _, part := range n.ins {
		in.Writers += part.from.cfg.Replicas
	}
	if rt.cfg.storage.Shared() && n.wm != nil && n.wm.fetchers[r] != nil {
		in.Ended = rt.endedUpstream(n, n.wm.fetchers[r])
	}
	return in
}

// endedUpstream answers forwarder.Input.Ended from f: the upstream
// processors of n whose final WMB is in the store, named as their ends of
// stream name them.
func (rt *runtime) endedUpstream(n *node, f *watermark.Fetcher) func(int) map[string]int64 {
	names := map[string]string{} // watermark processor -> end-of-stream processor
	for _, part := range n.ins {
		for i := range part.from.cfg.Replicas {
			if wp, err := rt.processor(part.from.name, i); err == nil {
				names[wp] = forwarder.Config{Vertex: part.from.name, Replica: i, Run: rt.run}.Processor()
			}
		}
	}
	return func(partition int) map[string]int64 {
		out := map[string]int64{}
		for _, e := range f.Ended(partition) {
			if proc, ok := names[e.Processor]; ok {
				out[proc] = e.Offset
			}
		}
		return out
	}
}

// drainDeadline fails the pipeline with ErrDrainTimeout when it has not
// finished draining DrainTimeout after the drain began (ctx cancelled, or
// Drain).
func (rt *runtime) drainDeadline(finished <-chan struct{}) {
	select {
	case <-finished:
		return
	case <-rt.soft.Done():
	}
	if rt.cfg.drainTimeout == 0 {
		return
	}
	t := time.NewTimer(rt.cfg.drainTimeout)
	defer t.Stop()
	select {
	case <-finished:
	case <-t.C:
		rt.fail(ErrDrainTimeout)
	}
}

// close closes the buffers and the user's sources and sinks.
func (p *Pipeline) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	// Sources first: a resumable one saves its position with its output
	// buffers' tails, and holds them (source_resume.go).
	for _, sources := range []bool{true, false} {
		for _, n := range p.nodes {
			if (n.kind == kindSource) != sources {
				continue
			}
			for _, l := range n.leases {
				errs = append(errs, l.Release())
			}
			n.leases = nil
			if n.in != nil {
				n.final = n.in.state()
				n.final.readers = nil // nothing reads a closed buffer
				errs = append(errs, n.in.close())
			}
			if p.abandoned[n] {
				continue // its replicas may still be in its source or sink
			}
			for _, c := range n.closers {
				if err := c(); err != nil {
					errs = append(errs, &VertexError{Vertex: n.name, Err: err})
				}
			}
		}
	}
	p.live = false
	return errors.Join(errs...)
}
