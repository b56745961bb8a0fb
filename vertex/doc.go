// Package vertex holds what users of runnel write and configure: the message
// envelope ([Message]), the function signatures of map, map-stream and
// batch-map vertices, the [Source] and [Sink] interfaces with their built-in
// implementations (generator, channel, iterator, slice; log, blackhole,
// function, channel), tag conditions ([Condition]) and per-vertex options
// ([Option]).
//
// The built-in sources and sinks are made by functions (FromSlice,
// Generator, FromTopic, Blackhole, ...), most returning a [Source] or a
// [Sink]. The two with settings, [Generator] and [FromTopic], are configured
// by methods chained after the constructor, such as
// Generator(f).WithCount(n).WithKeys(8): Go has no optional arguments, so
// a source without settings is just its constructor, and a setting typed
// by the source's item (FromTopic's WithEventTime) is checked by the
// compiler against the topic, which a config struct of that item type
// could only do if every caller spelled the type out.
//
// What a vertex's failure looks like to the caller of pipeline.Run is
// here too: a [*ProcessError] naming the vertex, replica and message,
// wrapping [ErrRetriesExhausted] when the [RetryPolicy] gave up, or a
// [*PanicError] when user code panicked.
//
// A source that reads several partitions of its own and returns each batch
// from one of them ([FromTopic] does) implements [PartitionedSource]: the
// pipeline then keeps its watermark per partition.
//
// The pipeline package wires these into a running dataflow; vertex itself
// starts no goroutines.
package vertex
