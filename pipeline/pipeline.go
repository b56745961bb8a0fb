package pipeline

import (
	"fmt"
	"github.com/runnel-dev/runnel/isb"
	"reflect"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/forwarder"
	"github.com/runnel-dev/runnel/vertex"
)

// Pipeline is a graph of vertices under construction, then running. Build
// it from one goroutine; Stats may be called from any goroutine, also while
// Run runs.
type Pipeline struct {
	name  string
	opts  []Option
	nodes []*node
	names map[string]*node
	errs  []error // problems found while building, reported by Run

	mu   sync.Mutex // guards ran and the runtime state of nodes
	ran  bool
	live bool // buffers open: Stats may ask them
	// resolved is set once Run's validate wrote every node's cfg and
	// outs: Status reads them only then (or before Run, when nothing
	// writes them).
	resolved bool
	// What Status shows of the run (guarded by mu): set once Run opened
	// the buffers, kept after it returned.
	last    *runtime // for the run's first error
	run     string
	storage string
	started time.Time
	rates   rateRing // sampled every rateEvery while the run is live
	// rt is the running Run's runtime (nil before and after); stopAsked
	// and drainAsked record a Stop or Drain, also one before Run got to
	// rt; abandoned are the vertices with replicas Run returned without.
	rt                    *runtime
	stopAsked, drainAsked bool
	abandoned             map[*node]bool
	done                  chan struct{} // closed when Run returns
}

// Option configures a pipeline.
type Option func(*config)

type config struct {
	logger       *zap.Logger
	drainTimeout time.Duration
	hooks        func(vertex string, replica int) forwarder.Hooks
	wm           WatermarkConfig      // resolved by newConfig; its Store nil: a new MemStore per Run
	storage      Storage              // resolved by newConfig: never nil
	codecs       map[reflect.Type]any // WithCodec: value codecs by type
	commitEvery  time.Duration        // CommitInterval
	emitOnStop   bool                 // EmitOpenWindowsOnStop
	sub          *subset              // set by Run: what this process runs (nil: everything)
}

// WithLogger logs the pipeline's life and problems on l (nil, the
// default, logs nothing).
func WithLogger(l *zap.Logger) Option { return func(c *config) { c.logger = l } }

// DrainTimeout bounds how long Run drains after ctx is cancelled or Drain
// is called (default 1 minute; 0 waits as long as it takes). When it
// expires, the pipeline stops at once, leaving what is in flight
// unacknowledged, and Run returns ErrDrainTimeout, at most AbandonAfter
// later even when a sink ignores its context.
func DrainTimeout(d time.Duration) Option { return func(c *config) { c.drainTimeout = d } }

// withHooks gives each replica its watermark and work-in-progress hooks
// instead of the built-in watermarks (see Watermarks): the seam tests use
// to watch the forwarders' calls. f is called once per replica when Run
// starts.
func withHooks(f func(vertex string, replica int) forwarder.Hooks) Option {
	return func(c *config) { c.hooks = f }
}

func newConfig(opts []Option) (config, error) {
	c := config{drainTimeout: time.Minute, commitEvery: defaultCommitInterval}
	if err := isb.ApplyOptions(&c, "pipeline.Option", opts); err != nil {
		return c, err
	}
	if c.logger == nil {
		c.logger = zap.NewNop()
	}
	if c.drainTimeout < 0 {
		return c, &isb.OptionError{Package: "pipeline", Option: "DrainTimeout", Value: c.drainTimeout, Reason: "must not be negative"}
	}
	wm, err := c.wm.resolve()
	if err != nil {
		return c, err
	}
	c.wm = wm
	if err := checkStorage(&c); err != nil {
		return c, err
	}
	return c, nil
}

// New returns an empty pipeline. name names its buffers and logs: letters,
// digits, '-' and '_'. Options are validated by Run.
func New(name string, opts ...Option) *Pipeline {
	p := &Pipeline{name: name, opts: opts, names: map[string]*node{}, done: make(chan struct{})}
	if !validName(name) {
		p.errs = append(p.errs, fmt.Errorf("%w: pipeline name %q: use letters, digits, '-' and '_'", ErrInvalidName, name))
	}
	return p
}

// Name returns the pipeline's name.
func (p *Pipeline) Name() string { return p.name }

func validName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// kind is what a vertex does.
type kind uint8

const (
	kindSource kind = iota
	kindMap
	kindSink
	kindReduce
)

func (k kind) String() string {
	return [...]string{"source", "map", "sink", "reduce"}[k]
}

// node is one vertex. The typed parts (its input buffer, its replicas'
// loops) are closures made by the generic builder functions, so the rest of
// the package handles every vertex alike.
type node struct {
	name        string
	kind        kind
	opts        []vertex.Option
	cfg         forwarder.Options // set by validate
	ins         []streamPart      // edges into the node
	outs        []outEdge         // edges out of the node, set by validate
	check       func() error      // the vertex's own validation (nil function, source options)
	hasFallback bool              // a sink with a fallback sink
	// fn is the user's source or sink, whose retry policy is the vertex's
	// default when it is a vertex.RetryDefaulter (forwarder.NewVertexOptions).
	fn any
	// readParts is how many partitions a source reads (a
	// vertex.PartitionedSource's ReadPartitions; 0 otherwise): its
	// watermark is kept per partition.
	readParts int
	// refused is set for a vertex whose name was refused (invalid, or
	// taken): that error is its one error, and validate skips it and its
	// edges, so no "unknown edge" or "no output" follows from it.
	refused bool
	// dupName is set on the vertex that holds a name another one asked
	// for: whether it lacks an input or output is unknowable (the edges
	// meant for it may be the refused vertex's), so validate does not say.
	dupName bool

	// open creates the node's input buffer (not for sources).
	open func(c *config, p *Pipeline, n *node) (buffer, error)
	// run runs replica r until it is done.
	run func(rt *runtime, n *node, r int) error
	// prepare, when not nil, opens and checks what the replicas need
	// before any vertex runs (a reduce's WALs on durable storage), so a
	// refusal starts nothing; release closes what it opened if the run
	// does not start.
	prepare func(rt *runtime, n *node) error
	release func()
	// closers are the user's sources and sinks with a Close method.
	closers []func() error
	// resume gives a source what it needs from the open buffers before
	// any replica runs: a resumable one its state (source_resume.go).
	resume func(c *config, p *Pipeline, n *node) error

	// Runtime state, set by Run.
	in       buffer
	opened   time.Duration // how long opening in took, for the line saying where the vertex resumes it
	counters []*forwarder.Counters
	failures *forwarder.FailureLog // shared by the replicas: the rate limit of their failure lines is the vertex's
	drops    *forwarder.DropLog    // likewise, for the lines about dropped messages
	final    bufferState           // the closed buffer's pending and usage
	leases   []isb.Lease           // a source's claims of its replicas on shared storage
	wm       *vertexWatermarks     // nil: watermarks off
	// obs is what the vertex's storage reports and the error that failed
	// a replica: made with the node, so that Stats reads it at any time.
	obs *observed
}

// outEdge is an edge out of a node, as validate resolved it.
type outEdge struct {
	to      *node
	when    *vertex.Condition
	discard bool // drop what does not fit (Stream.DiscardWhenFull)
	late    bool // the late-data stream of a reduce vertex
	// counters count what the edge carried; made by validate, so a
	// snapshot during or after the run finds them.
	counters *forwarder.EdgeCounters
}

// add registers a new vertex, recording a build error for a bad or
// duplicate name.
func (p *Pipeline) add(name string, k kind, opts []vertex.Option) *node {
	n := &node{name: name, kind: k, opts: opts, obs: newObserved()}
	switch {
	case !validName(name):
		n.refused = true
		p.errs = append(p.errs, &VertexError{Vertex: name, Err: fmt.Errorf("%w: use letters, digits, '-' and '_'", ErrInvalidName)})
	case p.names[name] != nil:
		n.refused = true
		p.names[name].dupName = true
		p.errs = append(p.errs, &VertexError{Vertex: name, Err: ErrDuplicateName})
	default:
		p.names[name] = n
	}
	p.nodes = append(p.nodes, n)
	return n
}
