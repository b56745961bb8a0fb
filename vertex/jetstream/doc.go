// Package jetstream connects runnel pipelines to NATS JetStream streams,
// on github.com/nats-io/nats.go/jetstream: a [Source] reading a stream
// through a durable pull consumer, acknowledging each message only once
// the pipeline has it, and a [Sink] publishing with the message ID as
// Nats-Msg-Id, so a stream's duplicate window drops what a restart
// writes again. It is a package of its own so that a pipeline without
// JetStream does not compile nats.go in; for plain NATS subjects see
// package vertex/nats.
//
// Its name is the one of nats.go's jetstream package, which a program
// using it imports too (to make streams): import it as vjetstream, as
// the examples do. The name says what it connects, as vertex/kafka's
// does; isb/jetstream, runnel's buffers on JetStream, is another package.
//
//	src, err := vjetstream.NewSource(ctx, vjetstream.SourceConfig{
//		Conn: nc, Stream: "ORDERS", Durable: "billing",
//	})
//	...
//	orders := pipeline.Source(p, "orders", src)
//
// Both take a connection the caller made and owns (its URL, credentials,
// TLS and reconnect policy are the caller's): closing the source or sink
// leaves it open.
//
// # Mapping
//
// As in vertex/nats: the data is the Value ([]byte); keys travel as the
// values of the header [KeyHeader], in order; the event time as
// [EventTimeHeader] (RFC 3339, nanoseconds, UTC); other headers as they
// are (the source keeps a header's last value; the sink writes no header
// starting with "Nats-", the server's control headers, except the
// Nats-Msg-Id it sets). A message without KeyHeader gets its keys from
// the subject's tokens at SourceConfig.KeyTokens, else none; one without
// a valid EventTimeHeader gets the time the stream stored it. The
// source's message ID is "stream/sequence", the message's place in the
// stream: the same at every delivery, so a sink downstream can
// deduplicate by it, and this package's Sink does.
//
// # What the source delivers
//
// At least once, and the source is replayable: its position is the
// durable consumer, which the server keeps, so a pipeline started again
// on the same consumer resumes with what it had not acknowledged. A
// message is acknowledged to JetStream only when the pipeline acknowledges
// it (vertex.Acker: written to the first buffer downstream); what was
// delivered and not acknowledged when a process stopped is delivered
// again: what the source held, at once after a Close (it gives it back
// with a Nak); the rest of a pull nats.go held, and everything after a
// crash, once the consumer's AckWait has passed. On durable storage (pipeline.MMap,
// pipeline/jsstorage) an acknowledged message is durable in the pipeline,
// so a process killed at any moment and started again loses nothing; on
// memory storage a crash loses what was acknowledged and not yet through
// to the sinks, as for every source (see package pipeline, "Delivery
// guarantees"). The source is not a vertex.Resumable: its position lives
// in the server, not in the pipeline's state store.
//
// A message stays in flight in the pipeline as long as the pipeline
// needs (a sink waiting out an outage): every AckWait/3 the source tells
// the server that the messages still in flight are in progress, so none
// is delivered again behind the pipeline's back; so are the messages
// fetched and not yet read (the keeper takes them out of the source's
// queue each time, a FetchBatch at most, and nats.go refills it from what
// it holds of its pulls; what it holds beyond three FetchBatches when the
// pipeline stalls can still be delivered again, a duplicate with the same
// ID). [Source.Redelivered] counts the
// deliveries the server had made before.
//
// Several processes may read one consumer (each with a source on it): the
// server hands each message to one of them.
//
// # What the sink delivers
//
// Write publishes its batch asynchronously, each message with its ID as
// Nats-Msg-Id, and returns once every publish is acknowledged by the
// stream: an acknowledged message is stored. A publish that fails or is
// not acknowledged within AckTimeout is answered vertex.ResultRetry with
// its cause (a *vertex.WriteError); by default ([Sink.DefaultRetry],
// vertex.RemoteRetry) the pipeline retries it until it stops, so a
// server that is down holds the pipeline back instead of failing it. A
// message written again (after a retry, or after a crash replays it) has
// the same Nats-Msg-Id, and the stream stores it once if the first was
// stored within its duplicate window (Duplicates, two minutes by
// default); [Sink.Duplicates] counts those. Between a source of this
// package and this sink, a pipeline is therefore effectively once within
// the window.
//
// # Tests
//
// The package's tests run against a NATS server with JetStream embedded
// in the test process: a pipeline from a stream through a map to a stream
// with exact per-ID counts, a child process killed with SIGKILL mid-run
// whose restart delivers every message at least once (repetitions
// counted), a server stopped for 2 seconds under a running sink, and
// in-progress upkeep past AckWait.
package jetstream
