// Package pipeline builds and runs a typed dataflow: sources, map and
// reduce vertices and sinks joined by partitioned inter-step buffers (the isb), each vertex
// run by one or more replicas of a forwarder.
//
// Vertices are added with generic functions, since methods cannot have type
// parameters: [Source] yields a [Stream], [Map], [FlatMap], [MapStream] and
// [BatchMap] turn a Stream[In] into a Stream[Out], [Reduce] and
// [ReduceStream] group a Stream[In] by key into event-time windows and
// return the Stream of window results beside the late-data Stream[In],
// [Sink] ends one. A
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
// drained through to the sinks; otherwise the first error.
//
// Event-time watermarks are on by default ([Watermarks] configures them,
// [WatermarkStore] shares their store, [WithoutWatermarks] turns them off):
// every message carries the watermark of the vertex that read it, sources
// mark late messages, and [Pipeline.Stats] reports each vertex's watermark.
package pipeline
