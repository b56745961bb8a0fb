// Package kafka connects runnel pipelines to Kafka, on
// github.com/twmb/franz-go: a [Source] reading topics as a member of a
// consumer group, and a [Sink] producing to a topic with the idempotent
// producer. It is a package of its own so that a pipeline without Kafka
// does not compile franz-go in.
//
//	src, err := kafka.NewSource(ctx, kafka.SourceConfig{
//		Brokers: []string{"localhost:9092"}, Group: "counter", Topics: []string{"views"},
//	})
//	...
//	views := pipeline.Source(p, "views", src)
//
// Values are the records' bytes ([]byte): decode them in a map vertex,
// where a record that does not decode meets the vertex's retry policy
// (drop it, or stop) instead of stopping the source.
//
// # What the source delivers
//
// A record becomes a message with the ID "topic/partition/offset" (the
// same every time the record is read, so a sink can deduplicate), the
// record's timestamp as its event time (a record without one gets the read
// time), its key as the message's one key (a record without a key has no
// keys), its headers (of a header key given twice, the last value) and its
// value.
//
// Delivery is at least once, and the source is replayable: its position
// is the group's committed offsets, which Kafka keeps, so a pipeline
// started again with the same group resumes after the last commit. The
// source commits only what the pipeline acknowledged (vertex.Acker: the
// message is written to the first buffer), per partition up to the first
// batch not yet acknowledged, never past one still in flight, and at most
// every CommitInterval. What was delivered after the last commit is read
// again after a restart, duplicates included. On durable storage
// (pipeline.MMap, pipeline/jsstorage) an acknowledged message is durable
// in the pipeline, so a process killed at any moment and started again
// loses nothing; on memory storage (the default) an acknowledged message
// is only in memory, and a crash loses what was committed and not yet
// through to the sinks, as for every source (see package pipeline,
// "Delivery guarantees").
//
// # Rebalances
//
// The client blocks rebalances while a poll runs (franz-go's
// BlockRebalanceOnPoll), so a revocation sees everything polled. When
// partitions are revoked, the source commits what was acknowledged of them
// (synchronously, before the rebalance goes on), drops what it polled of
// them and did not hand on, and from then on ignores the
// acknowledgements of their batches still in flight ([Source.Stale]
// counts them): it never commits a partition it no longer owns. A
// rebalance therefore repeats, at the partitions' new owner, the messages
// that were delivered and not yet acknowledged when it revoked them. A
// partition lost (the member fell out of the group) is dropped the same
// way without a commit, which would fail: everything after its last
// commit is repeated.
//
// # Watermarks
//
// The source is a vertex.PartitionedSource: every batch comes from one
// partition, and the pipeline keeps a watermark per partition of the
// topics (as counted when the source was made), so that a partition whose
// commit is behind another's after a restart is not judged late on the
// other's watermark.
//
// # Tests
//
// The package's tests run against franz-go's kfake cluster inside the
// test process: a pipeline from a topic through a map to a topic with
// exact per-ID counts, commits that never pass an unacknowledged message,
// revocation, and a child process killed with SIGKILL mid-run whose
// restart delivers every record at least once, the duplicates counted.
package kafka
