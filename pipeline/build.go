package pipeline

import (
	"context"
	"io"

	"github.com/runnel-dev/runnel/forwarder"
	"github.com/runnel-dev/runnel/vertex"
)

// validator is implemented by sources and sinks that can check their own
// options (the built-in generator does) before the pipeline starts.
type validator interface{ Validate() error }

// Source adds a source vertex reading src and returns its stream.
func Source[T any](p *Pipeline, name string, src vertex.Source[T], opts ...vertex.Option) Stream[T] {
	n := p.add(name, kindSource, opts)
	n.fn = src
	n.check = func() error {
		if src == nil {
			return ErrNilFunc
		}
		return validate(src)
	}
	n.closers = closerOf(src)
	if ps, ok := src.(vertex.PartitionedSource[T]); ok {
		n.readParts = ps.ReadPartitions()
	}
	var res *forwarder.SourceResume[T] // set by resume, read by the replicas it starts
	n.resume = func(c *config, p *Pipeline, n *node) (err error) {
		res, err = prepareSource(c, p, n, src)
		return err
	}
	n.run = func(rt *runtime, n *node, r int) error {
		return forwarder.RunResumedSource(rt.hard, rt.soft, rt.replicaConfig(n, r), src, edgesFor[T](n), res)
	}
	return streamOf[T](p, n)
}

// Map adds a vertex calling fn on the value of every message of in; the
// output keeps the input's ID, keys, tags and event time. Use KeyBy to set
// keys from the values, FlatMap to set tags, emit several outputs or drop.
func Map[In, Out any](p *Pipeline, name string, in Stream[In], fn func(ctx context.Context, v In) (Out, error), opts ...vertex.Option) Stream[Out] {
	var f forwarder.AppendFunc[In, Out]
	if fn != nil {
		f = forwarder.FromValueFunc(fn)
	}
	return addMap(p, name, in, f, opts)
}

// FlatMap adds a vertex turning every message of in into any number of
// messages (see vertex.Derive to keep the input's metadata).
func FlatMap[In, Out any](p *Pipeline, name string, in Stream[In], fn vertex.MapFunc[In, Out], opts ...vertex.Option) Stream[Out] {
	var f forwarder.AppendFunc[In, Out]
	if fn != nil {
		f = forwarder.FromMapFunc(fn)
	}
	return addMap(p, name, in, f, opts)
}

func addMap[In, Out any](p *Pipeline, name string, in Stream[In], fn forwarder.AppendFunc[In, Out], opts []vertex.Option) Stream[Out] {
	n := addReader[In](p, name, kindMap, in, opts, fn == nil)
	var res *forwarder.MapResume // set by resume, read by the replicas it starts
	n.resume = func(c *config, p *Pipeline, n *node) (err error) {
		res, err = prepareMap[In, Out](c, p, n)
		return err
	}
	n.run = func(rt *runtime, n *node, r int) error {
		return forwarder.RunResumedMap(rt.hard, rt.readStop(n), rt.replicaConfig(n, r), readerInput[In](rt, n, r), edgesFor[Out](n), fn, res)
	}
	return streamOf[Out](p, n)
}

// KeyBy adds a vertex setting the keys of every message of in to
// keys(value), keeping its value, ID, event time, tags and headers: the one
// call that keys a stream for a Reduce (which groups and routes by keys),
// where a FlatMap would have to Derive each message and replace its Keys.
// The slice keys returns becomes the message's: it must not be changed
// afterwards. To key a source's records, a source may set keys itself
// (vertex.FromTopic's WithKeys) and save the vertex.
func KeyBy[T any](p *Pipeline, name string, in Stream[T], keys func(v T) []string, opts ...vertex.Option) Stream[T] {
	var f forwarder.AppendFunc[T, T]
	if keys != nil {
		f = func(_ context.Context, m vertex.Message[T], outs []vertex.Message[T]) ([]vertex.Message[T], error) {
			m.Keys = keys(m.Value)
			return append(outs, m), nil
		}
	}
	return addMap(p, name, in, f, opts)
}

// MapStream adds a vertex whose function emits outputs as it produces them.
func MapStream[In, Out any](p *Pipeline, name string, in Stream[In], fn vertex.MapStreamFunc[In, Out], opts ...vertex.Option) Stream[Out] {
	n := addReader[In](p, name, kindMap, in, opts, fn == nil)
	n.run = func(rt *runtime, n *node, r int) error {
		return forwarder.RunMapStream(rt.hard, rt.readStop(n), rt.replicaConfig(n, r), readerInput[In](rt, n, r), edgesFor[Out](n), fn)
	}
	return streamOf[Out](p, n)
}

// BatchMap adds a vertex whose function is called once per read batch.
func BatchMap[In, Out any](p *Pipeline, name string, in Stream[In], fn vertex.BatchMapFunc[In, Out], opts ...vertex.Option) Stream[Out] {
	n := addReader[In](p, name, kindMap, in, opts, fn == nil)
	n.run = func(rt *runtime, n *node, r int) error {
		return forwarder.RunBatchMap(rt.hard, rt.readStop(n), rt.replicaConfig(n, r), readerInput[In](rt, n, r), edgesFor[Out](n), fn)
	}
	return streamOf[Out](p, n)
}

// Sink adds a vertex delivering every message of in to sink.
func Sink[T any](p *Pipeline, name string, in Stream[T], sink vertex.Sink[T], opts ...vertex.Option) {
	addSink(p, name, in, sink, nil, opts)
}

// SinkWithFallback adds a sink vertex with a fallback sink, which receives
// the messages sink answers vertex.ResultFallback and, under the
// vertex.ToFallback retry policy, those whose retries are used up.
func SinkWithFallback[T any](p *Pipeline, name string, in Stream[T], sink, fallback vertex.Sink[T], opts ...vertex.Option) {
	addSink(p, name, in, sink, fallback, opts)
	if fallback == nil {
		p.errs = append(p.errs, &VertexError{Vertex: name, Err: ErrNilFunc})
	}
}

func addSink[T any](p *Pipeline, name string, in Stream[T], sink, fallback vertex.Sink[T], opts []vertex.Option) {
	n := addReader[T](p, name, kindSink, in, opts, sink == nil)
	n.hasFallback = fallback != nil
	n.fn = sink
	n.closers = append(closerOf(sink), closerOf(fallback)...)
	prev := n.check
	n.check = func() error {
		if err := prev(); err != nil {
			return err
		}
		if err := validate(sink); err != nil {
			return err
		}
		return validate(fallback)
	}
	n.run = func(rt *runtime, n *node, r int) error {
		return forwarder.RunSink(rt.hard, rt.readStop(n), rt.replicaConfig(n, r), readerInput[T](rt, n, r), sink, fallback)
	}
}

// addReader adds a vertex reading in through an input buffer of T.
func addReader[T any](p *Pipeline, name string, k kind, in Stream[T], opts []vertex.Option, nilFn bool) *node {
	n := p.add(name, k, opts)
	n.ins = in.parts
	n.open = openBuffer[T]
	n.check = func() error {
		if nilFn {
			return ErrNilFunc
		}
		return nil
	}
	return n
}

func validate(x any) error {
	if v, ok := x.(validator); ok {
		return v.Validate()
	}
	return nil
}

func closerOf(x any) []func() error {
	if c, ok := x.(io.Closer); ok {
		return []func() error{c.Close}
	}
	return nil
}
