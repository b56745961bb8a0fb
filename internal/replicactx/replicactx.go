// Package replicactx carries the identity of a vertex replica in a
// context: the runtime sets it ([With]) on every context it gives a
// replica's source, function and sink, and vertex.ReplicaFrom reads it
// ([From]). It is a package of its own so that vertex, which users import,
// exports only the reading side.
package replicactx

import "context"

// key is the context key of a replica identity of type R.
type key[R any] struct{}

// With returns ctx carrying r.
func With[R any](ctx context.Context, r R) context.Context {
	return context.WithValue(ctx, key[R]{}, r)
}

// From returns the R that With put in ctx; ok is false if there is none.
func From[R any](ctx context.Context) (r R, ok bool) {
	r, ok = ctx.Value(key[R]{}).(R)
	return r, ok
}
