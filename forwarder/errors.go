package forwarder

import (
	"errors"

	"github.com/runnel-dev/runnel/vertex"
)

// Sentinel errors of package forwarder, matched with errors.Is.
var (
	// ErrRetriesExhausted is vertex.ErrRetriesExhausted (the same value),
	// under the name the forwarders' code uses.
	ErrRetriesExhausted = vertex.ErrRetriesExhausted
	// ErrNoFallback is returned when a sink asks for its fallback and the
	// vertex has none.
	ErrNoFallback = errors.New("forwarder: no fallback sink")
	// ErrNoSuchEdge is returned by Writer.WriteControl for a destination
	// or partition the writer does not write to.
	ErrNoSuchEdge = errors.New("forwarder: no such edge")
	// ErrReservedTag is returned by Writer.Write for a message carrying
	// ControlTag: readers would skip it as a control message, losing it.
	ErrReservedTag = errors.New("forwarder: message carries a reserved tag")
)

// ProcessError is vertex.ProcessError, under the name the forwarders'
// code uses: what a replica returns when it fails, which pipeline.Run
// returns to a pipeline author, who finds it in package vertex.
type ProcessError = vertex.ProcessError
