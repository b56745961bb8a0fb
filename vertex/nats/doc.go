// Package nats connects runnel pipelines to NATS core subjects, on
// github.com/nats-io/nats.go: a [Source] subscribing to a subject
// (optionally in a queue group) and a [Sink] publishing to a subject. It
// is a package of its own so that a pipeline without NATS does not
// compile nats.go in; for JetStream streams (stored, acknowledged,
// replayable) see package vertex/jetstream.
//
// Its name is nats.go's: import it under another, vnats in the examples.
//
//	nc, err := nats.Connect(url)
//	...
//	src, err := vnats.NewSource(vnats.SourceConfig{Conn: nc, Subject: "orders.>"})
//	...
//	orders := pipeline.Source(p, "orders", src)
//
// Both take a connection the caller made and owns (its URL, credentials,
// TLS and reconnect policy are the caller's): closing the source or sink
// leaves it open, and one connection may serve any number of them.
//
// # Mapping
//
// A NATS message and a runnel message map onto each other the same way
// here and in vertex/jetstream: the data is the Value ([]byte); the keys
// travel as the values of the header [KeyHeader] (one value per key, in
// order), the event time as the header [EventTimeHeader] (RFC 3339,
// nanoseconds, UTC), the other headers as they are (of a header with
// several values, the source keeps the last). A message without
// KeyHeader gets its keys from the subject's tokens at
// SourceConfig.KeyTokens when set ("orders.eu.42", tokens {1}: key "eu"),
// else none. A message without a valid EventTimeHeader gets the time it
// was read. The source's message ID is the header Nats-Msg-Id when the
// publisher set one, else a unique ID of the source's making. The sink
// never writes a header that starts with "Nats-" (the server's control
// headers: copied from elsewhere they would ask it for checks meant for
// another stream).
//
// # What the source delivers
//
// At most once: core NATS keeps nothing and redelivers nothing, so a
// message published while the source is not subscribed, or still held by
// it when the process stops or crashes, is lost. The source is not
// replayable. Messages wait between the subscription and the pipeline in
// a queue of SourceConfig.Pending messages, which nats.go's reader fills
// directly (a channel subscription); when a slow pipeline lets it fill,
// nats.go drops what comes next rather than blocking the connection
// (which would stall every other subscription on it): [Source.Dropped]
// counts them, the log (SourceConfig.Logger) has them at most once a
// second with the count, and the connection's error handler is told of a
// slow consumer, as for any nats.go subscription. A pipeline that must not
// lose messages under load reads a
// JetStream stream instead.
//
// # What the sink delivers
//
// Write publishes the batch, then flushes the connection: it returns only
// once the server has answered a ping sent after the batch, so an
// acknowledged message is at the server (and delivered to the
// subscribers it had then). A flush that fails or times out
// (SinkConfig.FlushTimeout) fails the batch, which is written again:
// messages that had reached the server are then published twice (at
// least once). By default ([Sink.DefaultRetry], vertex.RemoteRetry) the
// sink retries until the pipeline stops, so a server that is down holds
// the pipeline back instead of failing it.
//
// # Tests
//
// The package's tests run against a NATS server embedded in the test
// process: a pipeline from a subject through a map to a subject with
// exact per-ID counts, and the mapping both ways.
package nats
