package forwarder

import (
	"context"

	"github.com/runnel-dev/runnel/vertex"
)

// User code never takes the process down: every call the forwarders make
// into it (map functions, sources, sinks) runs under recoverPanic, here
// or where the call is made (mapEach, map-stream's call), which turns a
// panic into a *vertex.PanicError. The panic is then an error of the
// message or batch like any other: retried, dropped or failing the pipeline
// as the retry policy says. A guard costs a deferred call: per call, or per
// run of calls for a map function (paid per message, it showed in the
// pipeline's CPU profile: docs/benchmarks.md).

// guardAppend calls a map function once (a retry); RunMap's common path
// guards a whole run of calls at once (mapEach).
func guardAppend[In, Out any](ctx context.Context, fn AppendFunc[In, Out], m vertex.Message[In], outs []vertex.Message[Out]) (_ []vertex.Message[Out], err error) {
	defer recoverPanic(&err)
	return fn(ctx, m, outs)
}

// guardBatch guards a batch-map function.
func guardBatch[In, Out any](fn vertex.BatchMapFunc[In, Out]) vertex.BatchMapFunc[In, Out] {
	return func(ctx context.Context, ms []vertex.Message[In]) (_ [][]vertex.Message[Out], err error) {
		defer recoverPanic(&err)
		return fn(ctx, ms)
	}
}

// guardSink guards a sink; nil stays nil (a vertex without a fallback).
func guardSink[T any](s vertex.Sink[T]) vertex.Sink[T] {
	if s == nil {
		return nil
	}
	return vertex.SinkFunc[T](func(ctx context.Context, msgs []vertex.Message[T]) (_ []vertex.Result, err error) {
		defer recoverPanic(&err)
		return s.Write(ctx, msgs)
	})
}

// guardedRead reads the next batch from a source, into buf when the source
// can, recovering a panic of the source.
func guardedRead[T any](ctx context.Context, src vertex.Source[T], buffered vertex.BufferedSource[T], buf []vertex.Message[T], batch int) (_ []vertex.Message[T], err error) {
	defer recoverPanic(&err)
	if buffered == nil {
		return src.Read(ctx, batch)
	}
	n, err := buffered.ReadInto(ctx, buf)
	return buf[:n], err
}

// guardedAck acks msgs to a source, recovering a panic of the source.
func guardedAck[T any](ctx context.Context, a vertex.Acker[T], msgs []vertex.Message[T]) (err error) {
	defer recoverPanic(&err)
	return a.Ack(ctx, msgs)
}
