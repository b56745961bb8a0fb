package pipeline

import (
	"errors"
	"fmt"
	"slices"

	"github.com/runnel-dev/runnel/forwarder"
	"github.com/runnel-dev/runnel/internal/vconfig"
	"github.com/runnel-dev/runnel/isb"

	"github.com/runnel-dev/runnel/vertex"
)

// validate checks the whole graph before anything starts, resolves the
// edges and each vertex's options, and returns every problem found (joined),
// each naming its vertex.
func (p *Pipeline) validate() (config, error) {
	errs := append([]error(nil), p.errs...)
	cfg, err := newConfig(p.opts)
	if err != nil {
		errs = append(errs, err)
	}
	if len(p.nodes) == 0 {
		errs = append(errs, fmt.Errorf("%w: the pipeline has no vertices", ErrNoOutput))
	}
	vertexErr := func(n *node, err error) { errs = append(errs, &VertexError{Vertex: n.name, Err: err}) }
	for _, n := range p.nodes {
		n.outs = nil
	}
	for _, n := range p.nodes {
		if n.refused {
			continue
		}
		c, err := forwarder.NewVertexOptions(n.fn, n.opts...)
		if err != nil {
			vertexErr(n, err)
		}
		n.cfg = c
		for _, err := range kindErrors(n.kind, c) {
			vertexErr(n, err)
		}
		if n.kind == kindReduce && cfg.storage != nil {
			if err := reduceConcurrency(cfg.storage, &n.cfg); err != nil {
				vertexErr(n, err)
			}
		}
		if err := n.check(); err != nil {
			vertexErr(n, err)
		}
		if c.Retry.OnExhausted == vertex.ToFallback && !n.hasFallback {
			vertexErr(n, &isb.OptionError{Package: "pipeline", Option: "Retry.OnExhausted", Value: c.Retry.OnExhausted,
				Reason: "ToFallback needs a sink vertex with a fallback sink (SinkWithFallback)"})
		}
		if n.kind == kindSource && c.Retry.OnExhausted == vertex.DropMessage {
			vertexErr(n, &isb.OptionError{Package: "pipeline", Option: "Retry.OnExhausted", Value: c.Retry.OnExhausted,
				Reason: "a source's failed read has no message to drop; a source vertex takes FailPipeline"})
		}
		if n.kind != kindSource && len(n.ins) == 0 && !n.dupName {
			vertexErr(n, ErrNoInput)
		}
		seen := map[*node]bool{}
		for _, part := range n.ins {
			if part.from != nil && part.from.refused {
				continue // the refused vertex's error says it all
			}
			if part.from == nil || part.p != p || p.names[part.from.name] != part.from {
				vertexErr(n, ErrUnknownEdge)
				continue
			}
			if seen[part.from] {
				vertexErr(n, fmt.Errorf("%w from %q", ErrDuplicateEdge, part.from.name))
				continue
			}
			seen[part.from] = true
			if err := part.when.Validate(); err != nil {
				vertexErr(n, fmt.Errorf("edge from %q: %w", part.from.name, err))
			}
			part.from.outs = append(part.from.outs, outEdge{to: n, when: part.when, discard: part.discard, late: part.late,
				counters: new(forwarder.EdgeCounters)})
		}
	}
	for _, n := range p.nodes {
		if n.kind != kindSink && !n.refused && !n.dupName && !slices.ContainsFunc(n.outs, func(e outEdge) bool { return !e.late }) {
			vertexErr(n, ErrNoOutput) // a late-data stream alone is no output
		}
	}
	if cyc := p.cycle(); cyc != nil {
		vertexErr(cyc, ErrCycle)
	}
	return cfg, errors.Join(errs...)
}

// cycle returns a vertex on a cycle, or nil (Kahn's algorithm: what is
// never freed of inputs lies on or behind a cycle).
func (p *Pipeline) cycle() *node {
	indeg := map[*node]int{}
	for _, n := range p.nodes {
		for _, e := range n.outs {
			indeg[e.to]++
		}
	}
	var ready []*node
	for _, n := range p.nodes {
		if indeg[n] == 0 {
			ready = append(ready, n)
		}
	}
	done := 0
	for len(ready) > 0 {
		n := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		done++
		for _, e := range n.outs {
			if indeg[e.to]--; indeg[e.to] == 0 {
				ready = append(ready, e.to)
			}
		}
	}
	if done == len(p.nodes) {
		return nil
	}
	for _, n := range p.nodes {
		if indeg[n] > 0 {
			return n
		}
	}
	return nil
}

// kindErrors refuses the options given to a vertex that do not apply to its
// kind: a source has no input buffer, so the options of one (Partitions,
// PartitionByKey, BufferCapacity, ...) would be silently ignored there.
func kindErrors(k kind, c forwarder.Options) []error {
	if k != kindSource {
		return nil
	}
	var errs []error
	for _, name := range c.Given() {
		if slices.Contains(vconfig.InputOptions, name) {
			errs = append(errs, &isb.OptionError{Package: "pipeline", Option: name, Value: k.String(),
				Reason: "configures a vertex's input buffer, reader and stage; a source vertex has none"})
		}
	}
	return errs
}
