package vertex

import "context"

// Source feeds a pipeline.
//
// Read blocks until at least one message is available and returns up to max
// of them; it returns [io.EOF] (and no messages) once the source is
// exhausted, and ctx's error when ctx ends first. Messages without an event
// time get the time they were read. Messages returned together with an
// error (as an io.Reader may) are delivered all the same. Replicas of a source vertex call Read
// concurrently, so a Source must be safe for concurrent use; built-in
// sources are.
//
// A Source that also implements [Acker] is told which messages have been
// written downstream; one that implements io.Closer is closed once after
// the pipeline stops.
type Source[T any] interface {
	Read(ctx context.Context, max int) ([]Message[T], error)
}

// Acker is implemented by sources that must learn when a message is safely
// in the pipeline (written to every destination its tags select), for
// example to acknowledge it to an external broker.
type Acker[T any] interface {
	Ack(ctx context.Context, msgs []Message[T]) error
}

// BufferedSource is a [Source] that can fill a buffer its caller owns, so
// that a steady source allocates nothing per batch. The source forwarder
// prefers ReadInto to Read, and passes the same buffer again only after
// the previous batch was written and acked.
type BufferedSource[T any] interface {
	Source[T]
	// ReadInto fills buf[:n] with up to len(buf) messages (every field of
	// each), with the semantics of Read.
	ReadInto(ctx context.Context, buf []Message[T]) (n int, err error)
}

// PartitionedSource is a [Source] that reads several partitions of its own
// (FromTopic reads every partition of its topic) and returns each batch
// from one of them, to any replica. The pipeline then keeps a watermark
// per partition, and each replica's watermark is the lowest of them:
// partitions resume from their own commits after a restart, so one may be
// far behind another, and judging its messages on the watermark of the one
// ahead would make them late. A source that reads one partition need not
// implement it.
type PartitionedSource[T any] interface {
	Source[T]
	// ReadPartitions is how many partitions the source reads; it does not
	// change.
	ReadPartitions() int
	// PartitionOf returns the partition, in [0, ReadPartitions()), a
	// non-empty batch msgs came from, as Read or ReadInto returned it.
	PartitionOf(msgs []Message[T]) int
}
