package pipeline

import (
	"errors"
	"fmt"
	"slices"

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
		c, err := vertex.NewConfig(n.opts...)
		if err != nil {
			vertexErr(n, err)
		}
		n.cfg = c
		if err := n.check(); err != nil {
			vertexErr(n, err)
		}
		if c.Retry.OnExhausted == vertex.ToFallback && !n.hasFallback {
			vertexErr(n, &vertex.OptionError{Option: "Retry.OnExhausted", Value: c.Retry.OnExhausted,
				Reason: "ToFallback needs a sink vertex with a fallback sink (SinkWithFallback)"})
		}
		if n.kind != kindSource && len(n.ins) == 0 {
			vertexErr(n, ErrNoInput)
		}
		seen := map[*node]bool{}
		for _, part := range n.ins {
			if part.from == nil || part.p != p || p.names[part.from.name] != part.from {
				vertexErr(n, ErrUnknownEdge)
				continue
			}
			if seen[part.from] {
				vertexErr(n, fmt.Errorf("%w from %q", ErrDuplicateEdge, part.from.name))
				continue
			}
			seen[part.from] = true
			if err := vertex.ValidateCondition(part.when); err != nil {
				vertexErr(n, fmt.Errorf("edge from %q: %w", part.from.name, err))
			}
			part.from.outs = append(part.from.outs, outEdge{to: n, when: part.when, full: part.full, late: part.late})
		}
	}
	for _, n := range p.nodes {
		if n.kind != kindSink && !slices.ContainsFunc(n.outs, func(e outEdge) bool { return !e.late }) {
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
