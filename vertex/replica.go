package vertex

import "context"

// Replica identifies the vertex replica whose source, function or sink a
// context was given to.
type Replica struct {
	Vertex string
	Index  int // 0 <= Index < the vertex's Replicas
}

// replicaKey is the context key of a Replica.
type replicaKey struct{}

// WithReplica returns ctx carrying r. The runtime gives every call of a
// replica's source, function and sink such a context.
func WithReplica(ctx context.Context, r Replica) context.Context {
	return context.WithValue(ctx, replicaKey{}, r)
}

// ReplicaFrom returns the replica ctx was given to; ok is false for a
// context the runtime did not make. A source replica reads its own source
// partition with it, and a function can keep per-replica state.
func ReplicaFrom(ctx context.Context) (r Replica, ok bool) {
	r, ok = ctx.Value(replicaKey{}).(Replica)
	return r, ok
}
