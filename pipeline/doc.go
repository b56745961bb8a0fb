// Package pipeline builds and runs a typed dataflow: sources, map vertices
// and sinks joined by partitioned inter-step buffers (the isb), each vertex
// run by one or more replicas of a forwarder.
//
// Vertices are added with generic functions, since methods cannot have type
// parameters: [Source] yields a [Stream], [Map], [FlatMap], [MapStream] and
// [BatchMap] turn a Stream[In] into a Stream[Out], [Sink] ends one. A
// vertex fed by several streams joins them ([Join]); a stream split by tags
// ([Stream.Where], [Stream.Tagged]) carries only the messages whose tags
// match. The compiler checks that the types of connected vertices agree.
//
//	p := pipeline.New("words")
//	lines := pipeline.Source(p, "lines", vertex.FromSlice(text))
//	words := pipeline.FlatMap(p, "split", lines, split)
//	pipeline.Sink(p, "count", words, vertex.Func(count))
//	err := p.Run(ctx)
//
// Run validates the whole graph first (duplicate names, a vertex without
// input or output, an edge from another pipeline, a cycle, bad options)
// and reports every problem naming its vertex. It returns nil when every
// source is exhausted, or ctx is cancelled, and everything read has been
// drained through to the sinks; otherwise the first error. Sources end
// their output with end-of-stream messages that flow through the buffers,
// and each vertex ends once all its inputs ended and it acked all it read
// (see package forwarder), so the drain does not depend on the vertices
// sharing a process. On exhausted sources every vertex's final watermark is
// watermark.Max, which closes every window; after a cancel it stays where
// it was.
//
// Event-time watermarks are on by default ([Watermarks] configures them,
// [WatermarkStore] shares their store, [WithoutWatermarks] turns them off):
// every message carries the watermark of the vertex that read it, sources
// mark late messages, and [Pipeline.Stats] reports each vertex's watermark.
package pipeline
