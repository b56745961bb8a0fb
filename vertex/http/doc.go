// Package http connects pipelines to HTTP: a source that takes records
// POSTed to it ([NewSource]) and a sink that POSTs batches of records
// ([NewSink]). Records are []byte values; a pipeline maps them to and from
// its own types. (The package is named after what it speaks; import it
// under another name beside net/http, e.g. rhttp.)
//
// # Source
//
// The source is an http.Handler: mount it in a server of yours, under
// the path and middleware (authentication, TLS) you choose, or give
// [Listen] and it serves an address itself while the pipeline runs. A
// request is a POST whose body holds one record or a batch, by its
// Content-Type ([Format]):
//
//	application/x-ndjson, application/jsonl   one JSON value a line (each must be JSON)
//	application/json                          a JSON array of records, or one JSON value
//	text/plain                                one record a line, any bytes
//	application/octet-stream, or none         the body is one record
//
// Empty lines are skipped; an empty body or array is a batch of none.
// Each record of a JSON format is its JSON text. The answers:
//
//	200  {"accepted": n}: every record of the request is in the pipeline
//	400  the body is not what its Content-Type says (the message says where)
//	405  not a POST
//	413  the body is longer than MaxBodyBytes, or holds more records than Capacity
//	415  a Content-Type the source does not read
//	503  with Retry-After: the pipeline pushes back (the records do not fit
//	     in Capacity), did not acknowledge them within AckTimeout, or stopped
//
// A 200 is sent only once the pipeline acknowledged every record of the
// request: written to every buffer it goes to, which on durable storage
// (pipeline.MMap, JetStream) means on disk. A 200 therefore means
// "accepted durably into the pipeline", not "delivered to the sinks";
// answering on arrival would tell a client its records are safe while
// they are only in this process's memory.
//
// Backpressure: the source holds at most [Capacity] records, counted from
// the moment a request is accepted until the pipeline acknowledges them,
// so memory stays bounded however fast clients send. A request whose
// records do not fit is answered 503 at once, whole (none of it is taken),
// with Retry-After ([RetryAfter]); the pipeline's own buffers bound what
// it has read, so a slow sink fills them, then the source, and then the
// clients are told to wait. [Source.Buffered] tells how many records it holds.
//
// Delivery is at least once for a client that sends a request again until
// it gets a 2xx: a request answered 503 after AckTimeout, or whose client
// went away, may still have been delivered, so sending it again can
// deliver it twice. A client that gives a request an Idempotency-Key
// header ([IdempotencyKeyHeader]) makes its records' IDs "{key}/{index}",
// the same when it sends it again (a deduplicating sink drops the
// repeats), and a request sent again while the first is still waiting
// waits for that one instead of being added again. Records without one
// get IDs unique to the source ({start time}-{sequence}).
//
// The source is not replayable: what it took lives in the pipeline (on
// durable storage, in its buffers, and survives a restart there), but the
// source keeps no position and a client whose request was not answered
// 200 is the one that holds the data. It does not implement
// vertex.RetryDefaulter: its Read fails only when Listen cannot listen, a
// configuration error that retrying does not mend.
//
// # Sink
//
// The sink POSTs each batch the pipeline gives it (up to the vertex's
// BatchSize) as one body, in NDJSON by default ([WithFormat]: JSONArray,
// Lines), with an Idempotency-Key that is a digest of the batch's message
// IDs (the same batch sent again has the same key, which a runnel HTTP
// source honours). What the answer means for each message:
//
//	2xx                                   delivered
//	connection error, 5xx, 408, 429       retried, with the error as its cause
//	any other status (4xx, 3xx)           sent to the fallback sink, with the status as its cause
//
// A 4xx says the server will not take this batch however often it is sent
// again: with a fallback sink (pipeline.SinkWithFallback) the messages go
// there, and without one the pipeline fails with the status in the error.
// Redirects are not followed by the default client (a redirected POST may
// come back as a GET without its body). A value the format cannot carry
// (not JSON for NDJSON and JSONArray, a newline for Lines) goes to the
// fallback without being sent.
//
// Retries: the sink implements vertex.RetryDefaulter with
// vertex.RemoteRetry, so a vertex that sets no vertex.Retry retries a
// server that is down until the pipeline stops, with capped, jittered
// backoff; a vertex.Retry with MaxAttempts gives up instead. A server's
// Retry-After is not read: the vertex's policy sets the waits.
//
// Delivery is at least once: a batch whose answer was lost, or that a
// crash stopped before the pipeline committed it, is sent again.
package http
