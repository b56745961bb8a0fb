// Package vertex holds what users of runnel write and configure: the message
// envelope ([Message]), the function signatures of map, map-stream and
// batch-map vertices, the [Source] and [Sink] interfaces with their built-in
// implementations (generator, channel, iterator, slice; log, blackhole,
// function, channel), tag conditions ([Condition]) and per-vertex options
// ([Option]).
//
// A source that reads several partitions of its own and returns each batch
// from one of them ([FromTopic] does) implements [PartitionedSource]: the
// pipeline then keeps its watermark per partition.
//
// The pipeline package wires these into a running dataflow; vertex itself
// starts no goroutines.
package vertex
