package pipeline

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/runnel-dev/runnel/isb"
)

// Sentinel errors of package pipeline, matched with errors.Is.
var (
	// ErrDuplicateName: two vertices share a name.
	ErrDuplicateName = errors.New("pipeline: duplicate vertex name")
	// ErrInvalidName: a pipeline or vertex name is empty or has characters
	// other than letters, digits, '-' and '_'.
	ErrInvalidName = errors.New("pipeline: invalid name")
	// ErrNoInput: a map or sink vertex has no input stream.
	ErrNoInput = errors.New("pipeline: vertex has no input")
	// ErrNoOutput: a source or map vertex feeds no other vertex.
	ErrNoOutput = errors.New("pipeline: vertex has no output")
	// ErrUnknownEdge: a stream comes from another pipeline.
	ErrUnknownEdge = errors.New("pipeline: edge from a vertex of another pipeline")
	// ErrDuplicateEdge: the same stream feeds one vertex twice.
	ErrDuplicateEdge = errors.New("pipeline: duplicate edge")
	// ErrCycle: the edges form a cycle.
	ErrCycle = errors.New("pipeline: cycle")
	// ErrNilFunc: a vertex was given a nil function, source or sink.
	ErrNilFunc = errors.New("pipeline: nil function, source or sink")
	// ErrInvalidOption is isb.ErrInvalidOption (the same value): it matches
	// the *isb.OptionError of a pipeline option and of a vertex's
	// (vertex.Replicas(0) included), so one errors.Is test covers both.
	ErrInvalidOption = isb.ErrInvalidOption
	// ErrRunning: Run was called on a pipeline that has already run.
	ErrRunning = errors.New("pipeline: already run")
	// ErrDrainTimeout: after ctx was cancelled, draining took longer than
	// the DrainTimeout; what was still in flight was abandoned.
	ErrDrainTimeout = errors.New("pipeline: drain timeout")
	// ErrStopped: Stop (or a Drain whose context ended) stopped the
	// pipeline at once; what was in flight was abandoned, unacknowledged.
	ErrStopped = errors.New("pipeline: stopped")
	// ErrAbandoned is matched by every *AbandonedError: replicas did not
	// return after the pipeline stopped at once, and Run returned without
	// them.
	ErrAbandoned = errors.New("pipeline: replicas abandoned")
	// ErrUnknownVertex: Only or Replicas names a vertex the pipeline does
	// not have.
	ErrUnknownVertex = errors.New("pipeline: unknown vertex")
	// ErrStorage: the storage cannot run the pipeline as asked: a durable
	// storage that keeps no reduce log or no source state, or storage one
	// process owns asked to run a subset of the vertices (Only, Replicas).
	ErrStorage = errors.New("pipeline: storage cannot run this")
	// ErrReplicaTaken is matched by every *ReplicaError: another process
	// runs the replica already.
	ErrReplicaTaken = errors.New("pipeline: replica runs in another process")
)

// AbandonedError reports the replicas that had not returned AbandonAfter
// after the pipeline stopped at once (an error, the DrainTimeout, Stop):
// a source, function or sink of theirs ignored its context. Run returned
// without them; they are still running, and their sources and sinks were
// not closed.
type AbandonedError struct {
	Replicas []string // "vertex/replica", sorted
	After    time.Duration
}

func (e *AbandonedError) Error() string {
	return fmt.Sprintf("pipeline: replicas %s did not return within %v of the stop (a source, function or sink ignoring its context): abandoned", strings.Join(e.Replicas, ", "), e.After)
}

// Is matches ErrAbandoned.
func (e *AbandonedError) Is(target error) bool { return target == ErrAbandoned }

// ReplicaError reports that a replica of a vertex could not be claimed
// because another process holds its claim (on shared storage, see Only).
// The claim of a process that died expires, after which the replica can
// be started again.
type ReplicaError struct {
	Vertex  string
	Replica int
	Err     error // the storage's refusal
}

func (e *ReplicaError) Error() string {
	return fmt.Sprintf("pipeline: vertex %q replica %d runs in another process: %v", e.Vertex, e.Replica, e.Err)
}

// Unwrap returns the storage's refusal.
func (e *ReplicaError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrReplicaTaken) true.
func (e *ReplicaError) Is(target error) bool { return target == ErrReplicaTaken }

// VertexError reports a problem of one vertex.
type VertexError struct {
	Vertex string
	Err    error
}

func (e *VertexError) Error() string { return fmt.Sprintf("pipeline: vertex %q: %v", e.Vertex, e.Err) }

// Unwrap returns the problem.
func (e *VertexError) Unwrap() error { return e.Err }
