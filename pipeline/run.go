package pipeline

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/forwarder"
)

// runtime is the state of one Run.
type runtime struct {
	cfg  config
	log  *zap.Logger
	soft context.Context // ends: sources stop reading and the pipeline drains
	hard context.Context // ends: everything stops at once (an error)

	softCancel, hardCancel context.CancelFunc
	run                    string // this run's id, in end-of-stream messages

	mu    sync.Mutex
	first error
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
	return rt.first
}

// replicaConfig is what the forwarder of replica r of n needs.
func (rt *runtime) replicaConfig(n *node, r int) forwarder.Config {
	c := forwarder.Config{
		Vertex: n.name, Replica: r, Options: n.cfg, Counters: n.counters[r],
		Logger: rt.log.With(zap.String("vertex", n.name), zap.Int("replica", r)),
		Run:    rt.run,
	}
	switch {
	case rt.cfg.hooks != nil:
		c.Hooks = rt.cfg.hooks(n.name, r)
	case n.wm != nil:
		c.Hooks = n.wm.hooks(r)
	}
	return c
}

// Run validates the pipeline, opens its buffers and runs every replica of
// every vertex until the sources are exhausted or ctx is cancelled, and the
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
// pipeline stops at once (an error, or the DrainTimeout); they must return
// then, or Run waits for them.
func (p *Pipeline) Run(ctx context.Context) error {
	p.mu.Lock()
	if p.ran {
		p.mu.Unlock()
		return ErrRunning
	}
	p.ran = true
	p.mu.Unlock()
	cfg, err := p.validate()
	if err != nil {
		return err
	}
	if err := p.open(&cfg); err != nil {
		return err
	}
	rt := &runtime{cfg: cfg, log: cfg.logger.With(zap.String("pipeline", p.name))}
	// End-of-stream messages carry the run, so that ends a killed run left
	// in durable buffers do not end this run's readers (forwarder.Config.Run).
	rt.run = strconv.FormatInt(time.Now().UnixNano(), 36)
	rt.soft, rt.softCancel = context.WithCancel(ctx)
	// Writes and acks outlive ctx: a cancelled pipeline still drains.
	rt.hard, rt.hardCancel = context.WithCancel(context.WithoutCancel(ctx))
	defer rt.softCancel()
	defer rt.hardCancel()
	rt.log.Info("pipeline starting", zap.Int("vertices", len(p.nodes)))
	if err := p.prepare(rt); err != nil {
		return errors.Join(err, p.close())
	}
	if cfg.hooks == nil && !cfg.wm.Disabled {
		if err := p.startWatermarks(rt); err != nil {
			p.release()
			return errors.Join(err, p.close())
		}
		defer p.stopWatermarks(rt, p.watermarks())
	}
	p.start(ctx, rt)
	err = errors.Join(rt.err(), p.close())
	rt.log.Info("pipeline stopped", zap.Error(err))
	return err
}

// open creates every input buffer and the counters.
func (p *Pipeline) open(c *config) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range p.nodes {
		n.counters = make([]*forwarder.Counters, n.cfg.Replicas)
		for r := range n.counters {
			n.counters[r] = new(forwarder.Counters)
		}
		if n.kind == kindSource {
			continue
		}
		b, err := n.open(c, p, n)
		if err != nil {
			return errors.Join(&VertexError{Vertex: n.name, Err: err}, p.closeBuffers())
		}
		n.in = b
	}
	for _, n := range p.nodes {
		if n.resume == nil {
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
		if n.prepare != nil {
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

// closeBuffers closes the buffers open so far, after a failed open.
func (p *Pipeline) closeBuffers() error {
	var errs []error
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
func (p *Pipeline) start(ctx context.Context, rt *runtime) {
	var replicas sync.WaitGroup
	for _, n := range p.nodes {
		for r := range n.cfg.Replicas {
			replicas.Go(func() {
				if err := n.run(rt, n, r); err != nil {
					rt.fail(err)
				}
			})
		}
	}
	finished := make(chan struct{})
	var deadline sync.WaitGroup
	deadline.Go(func() { rt.drainDeadline(ctx, finished) })
	replicas.Wait()
	close(finished)
	deadline.Wait()
}

// readerInput is replica r's input: its side of n's buffer, and the
// processors that end each partition (every replica of every vertex feeding
// n; validate refuses a second edge from the same vertex).
func readerInput[T any](n *node, r int) forwarder.Input[T] {
	in := inputOf[T](n, r)
	for _, part := range n.ins {
		in.Writers += part.from.cfg.Replicas
	}
	return in
}

// drainDeadline fails the pipeline with ErrDrainTimeout when it has not
// finished draining DrainTimeout after ctx was cancelled.
func (rt *runtime) drainDeadline(ctx context.Context, finished <-chan struct{}) {
	select {
	case <-finished:
		return
	case <-ctx.Done():
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
			if n.in != nil {
				n.final = n.in.pending()
				errs = append(errs, n.in.close())
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
