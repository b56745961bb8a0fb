package forwarder

import "errors"

// Sentinel errors of package forwarder, matched with errors.Is.
var (
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
