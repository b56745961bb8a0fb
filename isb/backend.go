package isb

import "time"

// Backend is the storage of one topic. isb/memory and isb/mmap implement
// it for storage one process owns (a storage shared by processes adds the
// optional interfaces described under Watched); [NewTopic] wraps it with routing, consumer
// groups, commits, capacity and wake-ups, so a Backend only stores.
//
// Offsets in a Log start at 0 and are contiguous: Append of n items at tail t
// stores them at t..t+n-1.
type Backend[T any] interface {
	// Open prepares storage for the named topic with the given number of
	// partitions and recovers whatever durable storage holds. NewTopic calls
	// it exactly once, before any other method.
	Open(topic string, partitions int) error
	// Partition returns the log of partition p, 0 <= p < partitions.
	Partition(p int) Log[T]
	// Groups returns the consumer groups whose commits the storage holds
	// (recovered from disk or created in this process). Capacity and
	// retention account for every one of them.
	Groups() []string
	// DeleteGroup forgets every commit of group in every partition, so that
	// Groups no longer lists it and Committed reports it as unknown; a group
	// committed later under the same name is a new group. Durable storage
	// removes the group's checkpoints durably before returning (isb/mmap
	// removes offsets/{group}/ of every partition and fsyncs its parent), so
	// the group stays gone after a reopen. A group storage does not hold is
	// not an error: the topic retries a deletion that failed half-way.
	// The topic calls it only for a group without consumers, so no Commit
	// of that group runs concurrently; Release is called after it returns.
	DeleteGroup(group string) error
	// Close flushes and releases the storage. Topic.Close calls it once.
	Close() error
}

// Log is one partition of a Backend.
//
// The topic calls Append from one goroutine at a time per partition, unless
// the Log is a [ConcurrentLog]. Read,
// Head and Tail may run concurrently with Append and with each other, and
// must not take the lock that Append holds. Tail must be safe to poll from
// any goroutine (readers use it to find new items, see Append). Commit,
// Committed and Release may run concurrently with Append, Read, Head and
// Tail; calls of Commit for one group never overlap, and calls of Release
// never overlap. No method is called after Backend.Close.
type Log[T any] interface {
	// Append stores items at the tail and returns the offset of the first.
	// On error nothing of items is visible to readers. A durable backend
	// returns only after items are flushed as its flush policy requires.
	// Append must not keep items (the topic reuses the slice) and must make
	// the new Tail visible before it returns: the topic wakes readers right
	// after it.
	Append(items []T) (first int64, err error)
	// Read returns up to max items starting at offset, Head() <= offset <
	// Tail(). It may return fewer (for example at a segment boundary) but at
	// least one. It may return a slice that aliases storage, or decode into
	// buf (len(buf) >= max) and return buf[:n]. The result is valid until the
	// caller's next Read or until offset is released. A damaged record is an
	// error matching ErrCorrupt when it is the first one asked for, and ends
	// a batch before it otherwise; a Read of the offset after it still
	// returns the records that follow (consumers step past it with Skip).
	// An offset outside [Head(), Tail()), here and in Commit and Release
	// past Tail(), is a breach of this contract: every backend reports it
	// with an error matching ErrOutOfRange.
	Read(offset int64, max int, buf []T) ([]T, error)
	// Head is the earliest retained offset.
	Head() int64
	// Tail is the offset the next Append will use; items below it are readable.
	Tail() int64
	// Commit records that group has consumed every offset below offset.
	// Durable storage persists it before returning.
	Commit(group string, offset int64) error
	// Committed returns the stored commit of group, or (Head(), false) when
	// the group has none.
	Committed(group string) (offset int64, ok bool)
	// Release tells storage that every known group has committed below
	// offset; storage may recycle or delete what lies below it. Offsets
	// passed to Release only grow. Head may stay below offset (for example
	// when storage frees whole segments only).
	Release(offset int64) error
}

// ConcurrentLog is a Log that serializes its own appends: Append and
// AppendOne are safe for concurrent use. The topic then calls them without
// the per-partition mutex it otherwise holds around Append. A log that keeps
// its tail in an atomic word can make that word its lock (isb/memory does),
// so an append costs two atomic read-modify-writes of one cache line instead
// of a mutex's two plus the tail's store on another: on a single-item
// produce shared by several goroutines that is a third of the cost.
type ConcurrentLog[T any] interface {
	Log[T]
	// AppendOne is Append of one item, which it takes by value: the topic
	// would otherwise need a slice for it, and a slice passed through an
	// interface escapes to the heap (an allocation per produced item).
	AppendOne(item T) (offset int64, err error)
	// Seal waits for the appends in flight and makes every later Append and
	// AppendOne fail with an error matching ErrClosed. Topic.Close calls it
	// before Backend.Close, so that no append runs while storage closes; a
	// second call does nothing.
	Seal()
}

// Storage shared by processes.
//
// A Backend that several processes open at once (a remote log such as a
// JetStream stream per partition) brings what the topic cannot know from
// its own calls, as optional interfaces that NewTopic detects once:
//
//   - waiting: a Log that is also a [Watched] reports changes made by any
//     process, and they wake blocked Pulls and producers waiting for room
//     through the same waiters as this process's own appends (no second
//     wait path in Pull, no cost on the produce path);
//   - capacity: a Log that enforces its own limits fails Append with an
//     error matching [ErrFull], having stored nothing. FullWait producers
//     then wait for the storage's next change (or, without Watched, poll)
//     and retry; FullFail producers return ErrFull; TryProduce reports
//     false. The topic's own Capacity option counts only this process and
//     is usually left unset on such storage;
//   - membership: a Backend that is also a [Membership] keeps which
//     partitions of a group an open consumer reads, across processes, so
//     [Topic.JoinGroup] can open member i of n of a group in each process.
//     Commits are kept by the storage in every mode (Log.Commit and
//     Committed); on shared storage the topic reads a group's commits
//     again whenever a member joins;
//   - ack deadlines: a Log that is also an [AckDeadlines] redelivers what
//     is not committed within its ack wait. The consumer keeps what it was
//     delivered and has not committed in progress (a goroutine per
//     consumer, only for such storage), so callers above the isb (the
//     forwarder) never deal with deadlines.
//
// Why optional interfaces rather than a second Backend type: every one of
// them refines one call the topic already makes (Tail, Append, the
// consumer's partitions, the delivered range), so memory and mmap storage
// pay nothing, and a backend implements only what its storage does.
// isbtest.Shared is a test backend that implements all four and runs the
// behaviour suite.

// Watched is implemented by a Log whose storage other processes change.
type Watched interface {
	// Watch is called once, by NewTopic, before any other call but Open.
	// Storage calls wake after every change of its Tail or of a commit,
	// by any process (this one included), once the change is visible to
	// Tail and Committed. wake never blocks and is safe to call from any
	// goroutine; storage stops calling it when the Backend is closed.
	Watch(wake func())
}

// Membership is implemented by a Backend that keeps, across the processes
// that share it, which partitions of a group an open consumer reads.
type Membership interface {
	// Claim makes the caller the only reader of partitions of group until
	// unclaim is called. A partition another open consumer reads (in any
	// process) is an error matching ErrGroupInUse, and nothing is claimed.
	// Storage that can tell a crashed process from a live one frees its
	// claims (for example by a lease); unclaim is called once, when the
	// consumer closes, and Backend.Close ends the claims of consumers
	// still open (Topic.Close does not close them).
	Claim(group string, partitions []int) (unclaim func() error, err error)
}

// AckDeadlines is implemented by a Log that redelivers items a group does
// not commit within a deadline (JetStream's AckWait).
type AckDeadlines interface {
	// AckWait is the deadline. The consumer reports its delivered,
	// uncommitted range at least twice per AckWait.
	AckWait() time.Duration
	// InProgress restarts the deadline of group's items in [from, to):
	// delivered to a consumer and not committed yet.
	InProgress(group string, from, to int64) error
}
