package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/runnel-dev/runnel/isb"
)

// Running a pipeline over several processes.
//
// Every process builds the same graph and calls Run with the part it runs:
// Only("map") runs every replica of map, Replicas("map", 1) only replica 1.
// On shared storage (Storage.Shared: pipeline/jsstorage) the processes
// meet in the storage: each replica reads the partitions PullConsumers
// would give it, claimed in the storage so that a second process running
// the same replica is refused (a *ReplicaError) and a process that died
// leaves its claim to expire; ends of stream cross processes in the
// buffers, watermarks in the storage's watermark store, and every process
// joins the same run (Storage.JoinRun).
//
// What stops where: a source that is exhausted ends its output with an end
// of stream, and each vertex downstream ends once every replica feeding it
// has ended, in whichever process it runs. A process whose ctx is
// cancelled stops its own vertices only: each finishes and acknowledges
// what it read, and ends nothing downstream, so the other processes wait
// for it to be restarted (a reduce replica restarted on the same machine
// recovers its open windows from its WAL). On shared storage a run that
// is not split behaves the same way when cancelled: it stops, to be
// resumed by the next Run.

// RunOption chooses what one call of Run runs (default: everything).
type RunOption func(*subset)

// subset is the vertices and replicas this process runs.
type subset struct {
	// only maps a vertex to the replicas this process runs of it (nil:
	// every replica); nil map: every vertex.
	only map[string][]int
	errs []error // malformed options, reported by Run
}

// Only runs every replica of the named vertices in this process, and no
// other vertex. It needs shared storage (Storage.Shared) unless the
// vertices are the whole pipeline.
func Only(vertices ...string) RunOption {
	return func(s *subset) {
		for _, v := range vertices {
			s.add(v, nil)
		}
	}
}

// Replicas runs the given replicas of vertex in this process (with Only
// and other Replicas options: their union).
func Replicas(vertex string, replicas ...int) RunOption {
	return func(s *subset) {
		if len(replicas) == 0 {
			s.errs = append(s.errs, &isb.OptionError{Package: "pipeline", Option: "Replicas", Value: vertex, Reason: "names no replica"})
			return
		}
		s.add(vertex, replicas)
	}
}

func (s *subset) add(v string, replicas []int) {
	if s.only == nil {
		s.only = map[string][]int{}
	}
	had, ok := s.only[v]
	switch {
	case ok && had == nil, ok && replicas == nil && had != nil:
		s.only[v] = nil // every replica
	case ok:
		s.only[v] = append(had, replicas...)
	default:
		s.only[v] = slices.Clone(replicas)
	}
}

// Vertices is a flag.Value that names what a process runs, so that one
// binary is started once per role: a comma-separated list of vertices,
// each optionally with the replicas it runs after a colon, joined by '+':
//
//	-vertices=source
//	-vertices=map:0+1,reduce
//	-vertices=        (empty: the whole pipeline)
//
// Pass it to Run with its Option method.
type Vertices struct {
	spec string
	opts []RunOption
}

// String returns the flag's value as set.
func (v *Vertices) String() string {
	if v == nil {
		return ""
	}
	return v.spec
}

// Set parses a value such as "map:0+1,reduce".
func (v *Vertices) Set(spec string) error {
	var opts []RunOption
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, reps, hasReps := strings.Cut(part, ":")
		if !hasReps {
			opts = append(opts, Only(name))
			continue
		}
		var rs []int
		for r := range strings.SplitSeq(reps, "+") {
			n, err := strconv.Atoi(r)
			if err != nil || n < 0 {
				return fmt.Errorf("pipeline: vertices %q: replica %q of %q is not a replica index", spec, r, name)
			}
			rs = append(rs, n)
		}
		opts = append(opts, Replicas(name, rs...))
	}
	v.spec, v.opts = spec, opts
	return nil
}

// Option returns the RunOption the flag's value says (none: everything).
func (v *Vertices) Option() RunOption {
	opts := v.opts
	return func(s *subset) {
		for _, o := range opts {
			o(s)
		}
	}
}

// resolve checks the subset against the validated graph and the storage.
// It returns nil when the subset is everything (no option, or every
// replica of every vertex named).
func (s *subset) resolve(p *Pipeline, c *config) (*subset, error) {
	if len(s.errs) > 0 {
		return nil, errors.Join(s.errs...)
	}
	if s.only == nil {
		return nil, nil
	}
	var errs []error
	whole := true
	for _, n := range p.nodes {
		reps, ok := s.only[n.name]
		if !ok {
			whole = false
			continue
		}
		slices.Sort(reps)
		reps = slices.Compact(reps)
		s.only[n.name] = reps
		for _, r := range reps {
			if r < 0 || r >= n.cfg.Replicas {
				errs = append(errs, &VertexError{Vertex: n.name, Err: &isb.OptionError{Package: "pipeline", Option: "Replicas", Value: r,
					Reason: fmt.Sprintf("the vertex has replicas 0 to %d", n.cfg.Replicas-1)}})
			}
		}
		if reps != nil && len(reps) < n.cfg.Replicas {
			whole = false
		}
	}
	for name := range s.only {
		if p.names[name] == nil {
			errs = append(errs, &VertexError{Vertex: name, Err: fmt.Errorf("%w: Only or Replicas names no vertex of pipeline %q", ErrUnknownVertex, p.name)})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if whole {
		return nil, nil
	}
	if !c.storage.Shared() {
		return nil, fmt.Errorf("%w: %s is storage one process owns: a process can run a subset of the vertices (Only, Replicas) only on shared storage such as pipeline/jsstorage", ErrStorage, c.storage)
	}
	return s, nil
}

// runs reports whether this process runs replica r of n (a nil subset runs
// everything).
func (s *subset) runs(n *node, r int) bool {
	if s == nil {
		return true
	}
	reps, ok := s.only[n.name]
	return ok && (reps == nil || slices.Contains(reps, r))
}

// runsAny reports whether this process runs any replica of n.
func (s *subset) runsAny(n *node) bool {
	if s == nil {
		return true
	}
	_, ok := s.only[n.name]
	return ok
}

// writesTo reports whether this process runs a replica of a vertex that
// writes to n's input buffer (so it opens the buffer to write to it).
func (s *subset) writesTo(n *node) bool {
	for _, part := range n.ins {
		if s.runsAny(part.from) {
			return true
		}
	}
	return false
}

// replicasOf is how many replicas of n this process runs.
func (s *subset) replicasOf(n *node) int {
	if s == nil {
		return n.cfg.Replicas
	}
	reps, ok := s.only[n.name]
	switch {
	case !ok:
		return 0
	case reps == nil:
		return n.cfg.Replicas
	}
	return len(reps)
}
