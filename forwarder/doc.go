// Package forwarder is the data plane of a running pipeline: the loops that
// move messages of one vertex replica from its input buffer through a user
// function to the next buffers.
//
//	reader -> workers (map | map-stream | batch map | reduce | sink) -> writer -> ack
//
// The reader holds a semaphore of MaxInFlight permits. Each loop acquires
// BatchSize permits, pulls one batch from the isb, gives the unused permits
// back, records every offset in a [tracker.Tracker] before any processing,
// and hands the batch to the workers in chunks. A message is acked only
// after every output derived from it is written: the ack deletes it from
// the tracker, releases its permit and marks its partition for commit; the
// reader commits each marked partition up to its lowest in-flight offset
// (everything below it is done). A slow stage therefore blocks the reader
// and backpressure reaches the sources with bounded memory.
//
// The reader commits the marked partitions before each wait (for permits,
// or in Pull), and its waits are never interrupted to commit: an ack that
// leaves its partition with nothing in flight commits that partition at
// once, from the acking goroutine (a commit does not wait for a blocked
// Pull; the reader's commits and the ackers' are serialized), so a drained
// partition is committed at once and an upstream waiting for capacity
// never waits for an idle reader. A failed commit of an acker ends the
// reader's wait and fails the replica.
//
// A replica's goroutines (its workers, the completer of its staged writes,
// its idle loops) run in one errgroup: the first error one of them returns
// cancels the group's context, which stops the reader and makes the
// workers nack what they hold, and is the error the replica returns once
// every goroutine has ended. Nothing else reports it. The replica stops in
// ordered steps (see replica.drain).
//
// On durable storage a write is done once flushed (or acknowledged by a
// server), and a round trip costs about as much for one message as for
// many. Where the buffers' writes complete later (isb.Caps.Deferred), a source replica keeps several read batches and a map
// replica several chunks in flight: a write is staged, and the replica's
// ordered completer waits for its flush, publishes its watermark and only
// then acks it, in the order it was staged, while the loop goes on with
// the next (completer.go). A reduce replica with a WAL does the same with
// its log appends. Nothing is acked before it is durable; memory storage
// stages nothing, and its replicas run no completer.
//
// A replica ends by itself when its input has ended: every processor
// writing to the partitions it reads has written its end-of-stream message
// there, and everything read is acked. It then ends its own output the same
// way (see eos.go). The decision rests on messages in the buffers only, so
// it holds when the vertices run in different processes.
//
// User code never takes the process down: a panic in a map function, a
// source or a sink is recovered into a *vertex.PanicError, an error of the
// message (or batch) like any other, to which the retry policy applies.
//
// A reduce replica's workers each own a shard of its keys and their open
// windows (see RunReduce): a message is acked once it is in its windows
// (and, on durable storage, in the WAL of its input partition: see
// ReduceLog, which also says why a log per partition and not per replica),
// and each window's results are written when the watermark closes it.
//
// A resumable source on durable storage (RunResumedSource) registers each
// batch from its read to its acknowledgement, so that the position it saves
// comes with anchors in its output buffers below everything the position
// does not cover, and after a crash it first acknowledges what it finds it
// wrote past them: it hands nothing over twice (source_resume.go). A map
// replica on durable storage (RunResumedMap) gives every output its origin
// (input partition, offset, output index), holds what it wrote until the
// commit of its input is persisted, and after a crash writes, of each input
// it reads again, only the outputs it does not find downstream: it writes
// nothing twice (map_resume.go).
//
// A source replica's watermark comes from its SourceWatermarker hook: one
// per replica, or, for a vertex.PartitionedSource (a topic source reads
// every partition of its topic) and an InputWatermarker hook, one per
// partition the source reads, the replica's being the lowest
// (source_marks.go), so that a partition left behind by a restart is never
// judged late on the watermark of one ahead.
//
// Watermarks plug in through the small interfaces of hooks.go; nil hooks
// cost nothing. No storage redelivers on its own (positions are the
// reader's, see isb/jetstream), so delivery needs no hook.
package forwarder
