// Package jetstream is the storage of the ISB on NATS JetStream: a topic
// that several processes, on several machines, open at once. Each process
// opens a Backend on its own connection; they share the streams, the
// groups' commits and the claims of group members.
//
//	nc, _ := nats.Connect(url, nats.MaxReconnects(-1))
//	topic, err := jetstream.NewTopic[Order](nc, "orders", jetstream.Topic(isb.Partitions(4)))
//	...
//	member, err := topic.JoinGroup("billing", i, n) // member i of n, in this process
//
// It is built on github.com/nats-io/nats.go (the jetstream package for
// streams and buckets, core requests for reads and publishes) and needs
// nats-server 2.11 or later (batched direct gets).
//
// # In the server
//
//	stream {prefix}{topic}-{p}            one per partition; its only subject is its name;
//	                                      Limits retention, DiscardNew, AllowDirect;
//	                                      metadata runnel.format (1, or 2 packed), .partitions, .codec, .type
//	bucket {Bucket}                       key {prefix}{topic}.{p}.{group} = the group's commit (decimal)
//	bucket {Bucket}-claims (TTL ClaimTTL) key {prefix}{topic}.{p}.{group} = the id of the claiming backend
//	subject runnel.isb.{prefix}{topic}.{p} core NATS: the last sequence after each append
//
// Names are escaped (see names.go): letters, digits and '-' stay, any
// other byte becomes "_XX". A message is the codec's encoding of one item
// (isb/codec, JSON unless WithCodec says otherwise, as in isb/mmap; a
// pipeline stores its envelope codec there), with a Nats-Msg-Id header
// {backend id}.{p}.{n}. The offset of a message is its stream sequence
// minus 1. On a packed stream (Packed, below) a message is a frame of
// items instead. A stream that exists with settings other than these
// (another partition count, codec, element type, format, limits,
// DiscardOld, a stream not made by this package) is refused with a
// *MismatchError.
//
// # Packed streams
//
// The server's cost per stored message is what bounds a stream: a CPU
// profile of a pipeline on an unpacked buffer showed the embedded server
// storing messages in 62% of the CPU, and in one run on this machine an
// async publish of single messages stored 50-84K per second where frames
// of 500 items stored 1.8-3.3M items per second (docs/benchmarks.md,
// "Packed appends"). With Packed, an append becomes one message per frame
// of up to FrameItems items (65,536 at most) and FrameBytes bytes (1 MiB,
// at most the server's max_payload less 1 KiB for headers), with one
// Nats-Msg-Id per frame: the server stores, acknowledges and deduplicates
// a frame as it did one item, so a frame is stored whole, once, or not.
// A frame is the payload of its message:
//
//	+---------+-----------+-------------------------+--------------------+----------------+
//	| version | count n   | length of item 0 .. n-1 | item 0 .. item n-1 | CRC-32C        |
//	| 1 byte  | uvarint   | n uvarints              | the codec's bytes, | 4 bytes, big-  |
//	| (1)     | 1..65,536 |                         | back to back       | endian, of all |
//	|         |           |                         |                    | bytes before   |
//	+---------+-----------+-------------------------+--------------------+----------------+
//
// The lengths come first so that a read reaches item i by adding i
// lengths, without decoding the items before it (a consumer whose batch
// is smaller than the frame reads it in several Reads). The checksum
// covers everything: a message published by something else, cut short or
// of another version is one damaged record, never read as wrong items.
//
// Offsets. The offset of item i of the frame at sequence s is
// (s-1)<<16 + i: strictly increasing, contiguous inside a frame, and
// unused from the end of a frame ((s-1)<<16 + n) to the next frame's first
// offset (s<<16). A Read therefore returns the items of one frame from the
// index its offset names, and says where they start (isb.Log.Read returns
// that offset); a read at or past the end of a frame moves to the next
// message. Offsets cannot be contiguous across frames: a frame's first
// offset would have to count the items of every frame before it, which a
// writer cannot know before the server orders its publish among those of
// other processes (an expected-last-sequence publish would serialize every
// writer of a partition). The tail is the end of the last frame (the
// offset after its last item), learned from this process's appends,
// other processes' announcements (which carry it), reads, and on Open and
// each refresh from a direct get of the stream's last message when its
// sequence is past what this process knows: "everything read" is still
// commit == tail. Retention deletes whole frames, below the frame holding
// the lowest commit.
//
// Counting. An offset difference is not a count of items on a packed
// stream: the usage limit and isb.Log.Count (Topic.Pending and Used) count
// the items of the frames between, from their counts as this process
// learns them (its own acknowledgements, the frame lists of other
// processes' announcements, reads, the last frame); a frame whose count
// is not known counts as one item, the least it holds. So UsageLimit keeps
// its meaning, a share of MaxMsgs in items, while MaxMsgs and MaxBytes
// are what the server counts, messages (frames) and bytes: since a frame
// holds at least one item, the usage limit is reached first.
//
// Damage. A frame that does not parse holds one offset, its first: a
// Read there is a *DecodeError (matching isb.ErrCorrupt and ErrFrame), the
// consumer's Skip steps past it and the next read moves to the next
// message; a missing message is an ErrGap at its first offset, stepped
// past the same way. Both errors say where they are (isb.CorruptOffset),
// since a read at the end of one frame may find the next one damaged. An
// item of a good frame that the codec refuses is a *DecodeError at its
// own offset, as on an unpacked stream.
//
// A stream records its format (runnel.format 1 unpacked, 2 packed): a
// backend of the other format is refused with a *MismatchError naming the
// stream and "format". Packing is an option here, so that streams made
// before it keep opening; pipeline/jsstorage packs by default.
//
// # Delivery positions: the client owns them
//
// JetStream offers two ways to read a stream. Server-owned delivery: a
// durable consumer per group and partition delivers messages and
// redelivers what is not acknowledged within its AckWait; the reader must
// then accept offsets it has seen before, keep every delivered message in
// progress (Numaflow sends +WPI per message every AckWait/3), and the
// consumer's position is the server's, not the commit the forwarder
// computes. Client-owned positions: the reader asks for messages by
// sequence, the group's commit is kept in the server, and nothing is ever
// redelivered behind the reader's back; the forwarder's assumption of
// strictly increasing offsets per partition holds (on an unpacked stream
// they are contiguous while no message is deleted inside the stream, which
// only an operator does: see ErrGap; a packed stream's jump from one frame
// to the next).
//
// Measured on the embedded server (docs/benchmarks.md has the runs), the
// read paths rank, fastest first: direct gets in batches without headers
// (chosen); a durable consumer with AckAll and Messages (server-owned);
// direct gets with headers; an ordered consumer from a start sequence; a
// durable consumer with AckAll and Fetch (server-owned). Of the commits, a
// KV update of the group's key (chosen) and a synchronous AckAll (which
// needs the message delivered) cost about the same, and a reset of a
// durable consumer to the commit more than ten times as much.
//
// Client-owned positions with batched direct gets read about twice as fast
// as the best server-owned path, keep the forwarder's offsets, need no
// in-progress upkeep and leave no per-reader state in the server: a read is one
// stateless request, so readers at any positions, in any process, share
// one subscription. Commits go to a KV bucket: a durable consumer would
// have to be reset (far slower) or fed every message to acknowledge one.
//
// # Appends
//
// An append publishes its items asynchronously (core publishes with reply
// subjects on one wildcard subscription, at most MaxOutstanding of the
// backend waiting for an acknowledgement) and returns a deferred isb.Write
// that waits for every acknowledgement (isb.Caps Concurrent and Deferred):
// appends of several goroutines overlap, and so do the writes a single
// producer keeps in flight (Producer.StageTo, a pipeline's source). A publish not acknowledged within AckTimeout, or cut
// by a reconnect, is sent again with the same message id until
// RetryTimeout: the server stores one message per id within Duplicates,
// and answers a repeat with the first one's sequence, so a retry after a
// lost acknowledgement is not a duplicate. Within an append the items keep
// their order unless a retry stores an item after a later one that went
// through at the first try. The offsets of one append are not contiguous
// when others append to the stream at the same time; the offset of its
// last item is exact once its Write completes, and the topic uses nothing
// else (see "Contract").
// After an append its process announces the new last sequence on the
// partition's core subject.
//
// # Reads and waiting
//
// A read is one batched direct get without headers (direct.go): the end
// of the batch carries the last sequence sent, so k messages from s are
// contiguous exactly when it is s+k-1; otherwise the read is made again
// with headers to find the missing message. The messages a read fetched
// past what it returns (a packed read returns one frame; a fetch brings
// up to 1 MiB of them) serve the next read at the next sequence without a
// round trip. A message that does not
// decode is a *DecodeError matching isb.ErrCorrupt, a missing one a
// *StreamError of kind ErrGap (also isb.ErrCorrupt): the consumer steps
// past either with Skip, so no partition is ever stuck on one message.
//
// The backend keeps what it knows of every stream (head, tail, each
// group's commit) in memory, only ever moving it forward: own appends and
// reads, other processes' announcements (core NATS: one small message per
// append call), a watch of the commit bucket, and a refresh of each
// stream's state every Refresh (for writers that announce nothing). A
// change wakes the topic's blocked Pulls and the producers waiting for
// room (isb.Log.Watch), so a Pull wakes on data from any process without a
// request per Pull. A JetStream pull request would also wait in the
// server, but only on a consumer, which would have to be reset to skip
// ahead after every wake (a reset each, above).
//
// # Commits, groups and retention
//
// A commit is a compare-and-set of the group's key (Create the first
// time, Update against the last revision known), so a stale commit of
// another process never moves it back: on a conflict the higher value is
// kept. Groups are the keys the bucket holds, so a group created in any
// process is known everywhere; DeleteGroup purges its keys.
//
// Retention is the storage's: the refresher deletes (purges) the messages
// below both the topic's Release and the lowest commit the bucket holds
// for the partition, which includes groups this process never saw, so a
// group of another process keeps its data. With no group nothing is
// deleted: it is kept for a group created later. Retention runs on every
// refresh and whenever Release moved an eighth of MaxMsgs.
//
// # Full
//
// Nothing a group has not committed is ever discarded: the stream refuses
// messages past MaxMsgs or MaxBytes (DiscardNew), never evicts (Numaflow's
// DiscardOld with a buffer limit equal to MaxMsgs lost data: its issues
// 1551, 1554). Producers see the partition full earlier, at UsageLimit of
// MaxMsgs uncommitted by the slowest group (or retained, without a group),
// computed from what the backend knows, so a produce costs no round trip
// for it; an append past it is an error matching isb.ErrFull with nothing
// published, which the topic maps to FullWait (wait for a change, retry)
// or FullFail. Open reads every stream's state and every commit before it
// returns, so a writer never writes into a full buffer because it has not
// looked yet (Numaflow 3422). A writer that knew too little is refused by
// the stream itself: ErrFull too, with nothing of the batch stored. Leave
// isb.Capacity unset on such a topic: it counts this process only.
//
// MaxAge, when set, is the one limit that deletes unconsumed data.
//
// # Membership
//
// A consumer's partitions are claimed in the claim bucket (Create: only if
// absent), renewed every ClaimTTL/3 and deleted when it closes; the
// bucket's TTL frees the claims of a process that died. A partition an
// open consumer of another process reads is isb.ErrGroupInUse.
//
// # Failures
//
// Through a lost connection or a restarting server, appends, reads and
// commits pause and retry until RetryTimeout, then fail with
// ErrUnreachable. Reads and publishes in flight fail at the reconnect and
// are sent again once the connection is back; a commit in flight waits
// for its RequestTimeout first. Delivery is at least once: an append that failed
// may have stored some of its items; a read is never lost, and a commit
// lost with the server only makes its items read again. Errors that do
// not heal are *StreamError values naming the stream: ErrUnreachable at
// Open (the first request unanswered within RequestTimeout),
// ErrStreamDeleted (the stream was deleted: reads, including a Pull
// blocked on it, and appends fail), ErrDenied, and *MismatchError.
//
// # Defaults
//
//   - Replicas 1: runs on any server, including the embedded one of a
//     test and a single-node deployment. A cluster runs 3 (as Numaflow
//     does); the replication factor is a property of the deployment, not
//     something a library can guess.
//   - File storage: the ISB holds data that acknowledged upstream, so it
//     must survive a server restart.
//   - MaxMsgs 100,000 per partition, MaxBytes unbounded, UsageLimit 0.8:
//     Numaflow's buffer is 30,000 messages at 80%; 100,000 is about 0.6 s
//     of appends at the rate measured here, room for a consumer's pause
//     without stopping producers at once. The 20%
//     between the usage limit and the stream's limit absorbs writers of
//     several processes that each know the usage as of their last look.
//   - Duplicates 2 minutes (nats-server's default), at least RetryTimeout
//     (1 minute) so that every retry falls inside the window.
//   - AckTimeout 5s, RequestTimeout 5s, Refresh 1s (Numaflow checks usage
//     every second), ClaimTTL 10s, MaxOutstanding 4096 (nats.go's default
//     for async publishes).
//
// # Contract
//
// The isb contract was reshaped on this package (docs/isb-contract.md has
// the call-by-call account):
//
//   - Every append returns an isb.Write, its completion; the offset of its
//     last item is known when it completes. An append that fails after
//     RetryTimeout may have stored part of its batch (the error says how
//     many messages were not acknowledged): at-least-once, and a retry of
//     the whole batch by the caller stores new message ids. Atomic batches
//     (all or nothing, contiguous) measured slower than this append.
//   - The storage declares isb.Caps{Concurrent, Deferred, Shared,
//     OwnsLimits}: the topic keeps no capacity gate (isb.Capacity is
//     refused) and the usage limit is this package's (UsageLimit).
//     Release stays: it carries this process's groups and Topic.Retain
//     holds, and retention never deletes below a commit any process holds
//     in the bucket. Holds of other processes are not seen (issue 21
//     keeps them in the server).
//   - Read and Commit take the consumer's context, which ends when it
//     closes; no call runs under the consumer's lock, so a server outage
//     stalls neither its commits nor its Close. Committed and Groups
//     return errors: a group whose commit cannot be read fails the join.
//   - A claim is an isb.Lease, lost when a renewal finds its key taken or
//     deleted: the consumer stops with isb.ErrClaimLost. When no renewal
//     succeeded for a ClaimTTL it is in doubt (isb.Lease.Doubt) and the
//     consumer reads nothing, until a renewal proves nobody took the key
//     (claims.go): a server outage of up to two ClaimTTLs is ridden out.
//   - A blocked Pull learns of a stream deleted under it through Watch:
//     the tail moves one past what was stored, so the Pull reads and gets
//     ErrStreamDeleted. A blocking wait per partition would cost a
//     goroutine per consumer partition (see isb.Log.Watch).
package jetstream
