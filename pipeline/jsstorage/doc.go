// Package jsstorage is the [pipeline.Storage] on NATS JetStream: a
// pipeline keeps its buffers in JetStream streams, its sources' state and
// the record of its run in a JetStream KV bucket and its watermarks in
// JetStream KV, so that one pipeline runs over several processes on
// several machines (pipeline.Only), each process on its own connection to
// the same servers. Only a reduce vertex's write-ahead log stays on the
// local disk of the process that runs it (ReduceLogDir), as it is read back
// only by the replica that wrote it.
//
//	nc, _ := nats.Connect(url, nats.MaxReconnects(-1))
//	st, err := jsstorage.New(nc, jsstorage.ReduceLogDir("/var/lib/app/wal"))
//	...
//	p := pipeline.New("orders", pipeline.WithStorage(st))
//
// # In the server
//
// Every name starts with the pipeline's name P, escaped as isb/jetstream
// escapes names (letters, digits and '-' stay, any other byte becomes
// "_XX", so '_' is "_5F") and followed by "__", which no escaped name
// holds: the names of two pipelines never meet, whatever their vertices
// are called.
//
//	stream {P}__{vertex}-{p}        partition p of the input buffer of vertex (isb/jetstream)
//	bucket {P}__isb, {P}__isb-claims  the buffers' group commits and claims (isb/jetstream)
//	bucket {P}__state               key source.{vertex}: a resumable source's state
//	                                key run: the run record (run.go)
//	bucket wm_{len}_{P}_...         the watermark buckets, one per edge (watermark.EdgeBucket names them after the pipeline)
//
// A buffer's streams record the envelope codec of its messages (the
// pipeline's BufferSpec.Codec) as their runnel.codec, so a pipeline
// reopened with another codec for a vertex's values is refused by
// isb/jetstream (a *jetstream.MismatchError) instead of misreading them.
//
// The buffers store each write of a vertex as frames of many messages,
// one JetStream message and one Nats-Msg-Id each (jetstream.Packed): the
// server's cost per stored message is what bounds a pipeline on JetStream
// (BenchmarkJetStreamPipeline: 22-77K msg/s with one JetStream message per
// message, 300-840K packed on the same machine, docs/benchmarks.md).
// Unpacked keeps one JetStream message per message. A buffer's streams
// record their format, and a pipeline reopened with the other one is
// refused with a *jetstream.MismatchError (setting "format").
//
// # Capacity
//
// A vertex's BufferCapacity c over n partitions bounds what each
// partition holds uncommitted by its slowest group to ceil(c/n) messages:
// that is isb/jetstream's usage limit, where producers see the buffer full
// (counted in messages, also on packed streams). The stream's own MaxMsgs
// is 4 ceil(c/n) JetStream messages (frames of a packed buffer, each at
// least one message of the pipeline), room for messages every group
// committed that a writer still holds to find again after a crash (see
// retainFactor), and for writers of several processes that each know the
// usage as of their last look. The capacity wins over a MaxMsgs and a
// UsageLimit given in BufferOptions; a capacity of 0 is unbounded (MaxMsgs
// the largest int64). A stream keeps the MaxMsgs it was
// created with: a changed BufferCapacity is refused as a mismatch, as a
// changed partition count is.
//
// # Durability
//
// A source's state and the run record are put with the server's
// acknowledgement, on file storage by default (StateStorage): they
// survive a server restart to the extent JetStream's own sync policy
// makes them (by default the server fsyncs every two minutes, and relies
// on its replicas in between). A state read back at the start of a run is
// read from the bucket's stream leader, never from a replica behind it
// (see leader.go). A request to the bucket that fails for a reason that
// heals (the server restarting, a leader election, a timeout: what
// jetstream.Transient names) is retried for RetryTimeout, as the buffers'
// appends and reads are, so a server restart that the buffers ride out
// does not fail a run through a source saving its position (retry.go).
package jsstorage
