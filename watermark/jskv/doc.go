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
// Watch runs on KV watchers (ordered push consumers delivering the last
// value per key, then every later change in stream order). Delete markers
// met before the end of the initial values are keys that no longer exist
// and are skipped; later ones, and purges, are OpDelete. A lagging watcher
// receives every change, in order, while JetStream flow control holds the
// rest on the server.
//
// A watch outlives its watchers. When one fails (its consumer gone, the
// client giving up recreating it) or the connection reconnects (the
// server may have restarted and lost the consumer), the watch opens
// another from the revision after the last change it delivered: nothing is
// repeated or missed, and nothing applied out of order. Changes the bucket
// no longer holds are coalesced: with History 1 (the default), a key
// changed twice while the watch reopened is seen at its latest value, as
// the Store contract allows. While the server is down the watch waits for
// the connection; an open that fails is retried after a pause growing to
// 1s, and each open waits at most 5s for the server (a request lost in a
// restart used to hang a watch for good).
//
// A watch ends with an error, a *[WatchError] naming the bucket and
// matching [ErrWatchFailed], only when it cannot go on:
//
//   - the bucket was deleted ([ErrBucketDeleted]), also when it was
//     created again since (a publisher's next Put does that): its changes
//     are gone, and the new bucket's revisions start over. The watch
//     learns of it from JetStream's deletion advisory at once, from a
//     check of the bucket's stream every 2s when the advisory does not come
//     (it is best effort), and when it reopens. A memory bucket lost in a
//     server restart is the same;
//   - the connection closed for good (nats.ErrConnectionClosed, for
//     example when its reconnect attempts ran out);
//   - the account may not do what a watch needs (nats.ErrPermissionViolation
//     for the bucket's stream, nats.ErrAuthorization,
//     jetstream.ErrJetStreamNotEnabledForAccount).
//
// Everything else (timeouts, no responders, JetStream not ready yet after
// a restart) is retried. A [watermark.Fetcher] fails on such an error, and
// a pipeline's Run returns it.
//
// # Puts from the data path
//
// Put waits for the server's acknowledgement, within its context. The
// data path does not call it: a [watermark.Publisher] puts WMBs and
// heartbeats from its own goroutine, each round bounded, so a forwarder
// never waits for NATS, and a WMB published while the server is down
// (a final one too) is put once it is back, or by the publisher's Stop.
//
// Delete announces only keys that exist (it deletes at the revision it
// read), matching [watermark.MemStore]: deleting a missing key is not an
// error and not a change.
package jskv
