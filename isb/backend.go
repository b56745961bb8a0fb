package isb

// Backend is the storage of one topic. isb/memory and isb/mmap implement
// it; [NewTopic] wraps it with routing, consumer
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
