package vertex

import (
	"context"

	"github.com/runnel-dev/runnel/internal/replicactx"
)

// Replica identifies the vertex replica whose source, function or sink a
// context was given to.
type Replica struct {
	Vertex string
	Index  int // 0 <= Index < the vertex's Replicas
}

// ReplicaFrom returns the replica ctx was given to; ok is false for a
// context the runtime did not make. The runtime gives every call of a
// replica's source, function and sink such a context: a source replica
// reads its own source partition with it, and a function can keep
// per-replica state.
func ReplicaFrom(ctx context.Context) (r Replica, ok bool) {
	return replicactx.From[Replica](ctx)
}
