// Package isb is runnel's inter-step buffer: a partitioned buffer queue that
// the pipeline uses between vertices and that also stands on its own.
//
// A [Topic] has a name, an element type T and N partitions. A [Producer]
// routes every item (also inside a batch) to one partition: round-robin by
// default, or by a numeric or string key ([Router]). Round-robin is the
// topic's: its round-robin producers share one rotation, so the k-th
// round-robin item the topic admits goes to partition k mod N (a single
// producer on a fresh topic sends item i to partition i mod N). Offsets are
// per partition, int64 and strictly increasing.
//
// Consumer groups read a topic independently. A group's consumers split the
// partitions between them (consumers <= partitions, the extra partitions to
// the first consumers); a consumer with several partitions reads them
// round-robin and skips the empty ones. A [PullConsumer] returns a [Batch]
// of one partition. Progress is committed automatically on the next Pull, or
// manually with Commit (the last batch) and CommitTo (everything below an
// offset). Commits are idempotent, never move backwards and never pass what
// was delivered, and never wait for data: a Pull blocked on empty
// partitions holds no lock, so another goroutine commits earlier batches
// of the same consumer meanwhile. A new group starts at the earliest retained item
// ([Topic.Earliest]). A [PushConsumer] calls a handler with batches from N
// goroutines; a handler panic becomes a *[PanicError].
//
// Damaged storage never stalls a consumer: a partition whose read fails
// returns a *[ReadError] naming the partition and offset in its round-robin
// turn, and the consumer's other partitions keep flowing. A damaged record
// (the error matches [ErrCorrupt]) is stepped past with [PullConsumer.Skip],
// which counts and logs it; push consumers report it to OnError and skip it.
//
// Capacity is optional and shared by a topic's partitions. It is released as
// the minimum committed offset over all known groups advances. When a topic
// is full, producers wait in FIFO order ([FullWait]) or fail with [ErrFull]
// ([FullFail]).
//
// A group outlives its consumers (it resumes from its commits), so an
// abandoned group holds capacity and retention until [Topic.DeleteGroup]
// removes it from the topic and from storage: the minimum commit is
// recomputed over the remaining groups and what only the deleted group held
// is released. A group with open consumers cannot be deleted
// ([ErrGroupInUse]); an unknown one is [ErrUnknownGroup]. A writer that
// must read back what it wrote holds it in storage with [Topic.Retain],
// which keeps retention, not capacity; each holder has its own hold, and
// storage releases below the lowest.
//
// Closing a topic wakes every blocked producer and consumer with
// [ErrClosed] before the storage is closed. Errors match the package's
// sentinels with errors.Is, or are *[OptionError] (an invalid option, named),
// *[TypeError] (a registry lookup with the wrong element type), *[ReadError]
// and *[PanicError].
//
// The storage is a [Backend]: isb/memory (the fast default) and isb/mmap
// (durable, memory-mapped files), both owned by one process, and
// isb/jetstream (NATS JetStream, shared by processes). Storage packages
// depend on isb, never the reverse; each offers a constructor that returns
// a *Topic[T]. What a storage can do it declares once, when it opens, in
// [Caps]: appends safe from several goroutines (Concurrent), writes that
// complete after Append returns (Deferred: [Producer.StageTo] then returns
// a [Pending] write, so that a producer writing batch after batch from one
// goroutine overlaps each flush or acknowledgement with its next writes),
// storage other processes open too (Shared: their changes wake blocked
// Pulls and producers through [Log.Watch], a member of a group claims its
// partitions with [Backend.Claim] and stops with [ErrClaimLost] when its
// [Lease] is lost, with [Topic.JoinGroup] member i of n runs in each
// process) and limits the storage enforces (OwnsLimits: ErrFull from
// Append, no Capacity gate in the topic). Every append returns a [Write],
// its completion. Commits are kept by the storage in every mode. No call
// to storage runs under a consumer's lock, and closing a consumer ends its
// calls in flight. isb/isbtest holds the suites every storage passes (Log
// contract, behaviour, restart, shared) and SharedStore, a test storage
// shared by topic instances.
//
// Every storage mode reports an offset it cannot serve or accept with an
// error matching [ErrOutOfRange], and a bad option with an *[OptionError],
// the one option error of every runnel package.
package isb
