// Package jskv is the [watermark.Store] on JetStream KV, for pipelines whose
// vertices run in several processes: every processor publishes its WMBs and
// heartbeats into the same KV buckets, and every fetcher watches them.
//
// # Mapping
//
// A store bucket is a JetStream KV bucket of the same name (stream
// KV_<bucket>, subjects $KV.<bucket>.<key>); a store key is a KV key. Names
// are checked with [watermark.CheckBucket] and [watermark.CheckKey], so a
// pipeline that runs on [watermark.MemStore] runs here unchanged.
//
// Buckets exist implicitly, as the contract says: the first Put or Watch of
// a bucket creates its KV bucket with the store's options (history, TTL,
// replicas, storage); a Get or Delete of a bucket that does not exist
// finds nothing and creates nothing. A bucket that already exists is used
// as it is, even when another process created it with other options: the
// store never rewrites a bucket's configuration. Handles are cached per
// bucket; a handle whose stream was deleted behind the store's back is
// dropped and the bucket created again on the next Put.
//
// # Watch
//
// Watch runs on the KV watcher (an ordered push consumer delivering the last
// value per key, then every later change in stream order). Delete markers
// met before the end of the initial values are keys that no longer exist
// and are skipped; later ones, and purges, are OpDelete. Nothing is
// coalesced: a lagging watcher receives every change, in order, while
// JetStream flow control holds the rest on the server.
//
// The watch survives reconnects of the NATS connection: the ordered
// consumer is recreated from the next stream sequence, so no change is lost
// or repeated. It fails, with an error matching [ErrWatchFailed] as its last
// pair, when the connection closes (for example when its reconnect attempts
// run out) or the consumer cannot be recreated (for example a memory bucket
// lost in a server restart). While the connection is down and still
// reconnecting the watch waits; it never ends silently.
//
// Delete announces only keys that exist (it deletes at the revision it
// read), matching [watermark.MemStore]: deleting a missing key is not an
// error and not a change.
package jskv
