package isb

import "context"

// Backend is the storage of one topic. isb/memory, isb/mmap and
// isb/jetstream implement it; [NewTopic] wraps it with routing, consumer
// groups, capacity and wake-ups, so a Backend only stores.
//
// What a storage can do is declared once, by Open, in its [Caps]; the
// topic and every wrapper read the Caps instead of asserting optional
// interfaces, so a wrapper over a Backend is one type whatever the storage
// under it can do (see package pipeline's commit batching).
//
// Offsets in a Log start at 0 and grow strictly within a partition. Storage
// one process owns (memory, mmap) stores the items of one Append
// contiguously; storage shared by processes (JetStream) may interleave
// other processes' items, and leave gaps where a message was deleted or
// after the last item of a packed frame (Read says where its items are).
// An offset difference is therefore a count of items only on contiguous
// storage: Log.Count counts them.
type Backend[T any] interface {
	// Open prepares storage for the named topic with the given number of
	// partitions, recovers whatever durable storage holds and declares what
	// the storage does. NewTopic calls it exactly once, before any other
	// method. Remote storage bounds it by its own request timeout.
	Open(topic string, partitions int) (Caps, error)
	// Partition returns the log of partition p, 0 <= p < partitions.
	Partition(p int) Log[T]
	// Groups returns the consumer groups whose commits the storage holds
	// (recovered from disk, created in this process or, on shared storage,
	// by any process). Capacity and retention account for every one of
	// them. An error (remote storage that cannot answer) fails NewTopic.
	Groups() ([]string, error)
	// DeleteGroup forgets every commit of group in every partition, so that
	// Groups no longer lists it and Committed reports it as unknown; a group
	// committed later under the same name is a new group. Durable storage
	// removes the group's checkpoints durably before returning (isb/mmap
	// removes offsets/{group}/ of every partition and fsyncs its parent), so
	// the group stays gone after a reopen. A group storage does not hold is
	// not an error: the topic retries a deletion that failed half-way.
	// The topic calls it only for a group without consumers in this
	// process, so no Commit of that group runs concurrently here; Release
	// is called after it returns.
	DeleteGroup(group string) error
	// Claim makes the caller the only reader of partitions of group, across
	// every process that opens the storage, until the Lease is released or
	// lost. A partition another open consumer reads is an error matching
	// ErrGroupInUse, and nothing is claimed. NewTopic's consumers call it
	// only when Caps.Shared; storage one process owns returns NoLease (the
	// topic keeps its own claims).
	Claim(group string, partitions []int) (Lease, error)
	// Close flushes and releases the storage. Topic.Close calls it once,
	// after every Log's Seal.
	Close() error
}

// Caps is what a storage declares when it opens.
type Caps struct {
	// Concurrent: Append and AppendOne are safe for concurrent use, so the
	// topic calls them without the per-partition mutex it otherwise holds.
	// A log that keeps its tail in an atomic word can make that word its
	// lock (isb/memory does): a single-item produce shared by several
	// goroutines then costs two atomic operations on one cache line.
	Concurrent bool
	// Deferred: an Append's Write completes later than Append returns
	// (after a flush, after the server's acknowledgements), so a producer
	// that keeps several writes in flight ([Producer.StageTo]) overlaps
	// them. Storage whose writes complete at once leaves it unset.
	Deferred bool
	// Shared: other processes open the same storage. Their appends and
	// commits reach this topic through Log.Watch, a known group's commits
	// are read again whenever a member joins, and consumers claim their
	// partitions with Backend.Claim. Shared storage deletes only below
	// the lowest commit it holds of any group, whatever Release says:
	// Release carries this process's view (its groups and its
	// Topic.Retain holds) as an upper bound.
	Shared bool
	// OwnsLimits: the storage enforces the topic's size itself and refuses
	// an append that does not fit with an error matching ErrFull, having
	// stored nothing. The topic then keeps no capacity gate of its own
	// (NewTopic refuses the Capacity option: a count kept in one process
	// cannot see what other processes append), and FullWait producers wait
	// for the storage's next change.
	OwnsLimits bool
}

// Log is one partition of a Backend.
//
// The topic calls Append and AppendOne from one goroutine at a time per
// partition, unless the storage declared Caps.Concurrent. Read, Head and
// Tail may run concurrently with Append and with each other, and must not
// take the lock that Append holds. Tail must be safe to poll from any
// goroutine. Commit, Committed and Release may run concurrently with
// Append, Read, Head and Tail; calls of Commit for one group and partition
// never overlap, and calls of Release never overlap. No method is called
// after Backend.Close.
type Log[T any] interface {
	// Append stores items after everything appended before, in order, and
	// returns the write's completion: items become readable (Tail passes
	// them) by the time the Write completes, never before an earlier
	// write's items. A durable backend completes the Write once the items
	// are flushed as its flush policy requires. An error from Append itself
	// stores nothing; an error from the Write's Wait says the items are not
	// stored (they never become readable in this process). Append must not
	// keep items: the topic reuses the slice.
	Append(items []T) (Write, error)
	// AppendOne is Append of one item, which it takes by value: a slice
	// passed through an interface escapes to the heap (an allocation per
	// produced item).
	AppendOne(item T) (Write, error)
	// Read returns up to max items from the first offset at or after
	// offset that holds one, Head() <= offset < Tail(), and that offset
	// (first): the items are at first, first+1, ... Storage whose offsets
	// are contiguous (memory, mmap, unpacked JetStream) always returns
	// offset itself; storage that leaves offsets unused (packed JetStream:
	// the offsets after a frame's last item) moves past them, so a reader
	// never assumes that the next batch starts where the last one ended.
	// It may return fewer items (for example at a segment boundary) but at
	// least one. It may return a slice that aliases storage, or decode into
	// buf (len(buf) >= max) and return buf[:n]. The result is valid until the
	// caller's next Read or until offset is released. A damaged record is an
	// error matching ErrCorrupt when it is the first one asked for, and ends
	// a batch before it otherwise; a Read of the offset after it still
	// returns the records that follow (consumers step past it with Skip).
	// An offset outside [Head(), Tail()), here and in Commit and Release
	// past Tail(), is a breach of this contract: every backend reports it
	// with an error matching ErrOutOfRange. Remote storage ends the call
	// when ctx ends; the consumer's ctx ends when it closes.
	Read(ctx context.Context, offset int64, max int, buf []T) (first int64, items []T, err error)
	// Head is the earliest retained offset.
	Head() int64
	// Tail is the offset after the last readable item.
	Tail() int64
	// Count is how many items lie in [from, to), offsets the topic took
	// from Head, Tail and commits: to-from on storage whose offsets are
	// contiguous; storage that leaves offsets unused counts the items
	// (packed JetStream: as far as this process knows the frames, see its
	// package doc). Topic.Pending and Used count with it.
	Count(from, to int64) int64
	// Commit records that group has consumed every offset below offset.
	// Durable storage persists it before returning. A stored commit never
	// moves back, whichever process commits. Remote storage ends the call
	// when ctx ends.
	Commit(ctx context.Context, group string, offset int64) error
	// Committed returns the stored commit of group, or (Head(), false, nil)
	// when the group has none; an error when storage cannot tell.
	Committed(group string) (offset int64, ok bool, err error)
	// Release tells storage that every known group has committed below
	// offset; storage may recycle or delete what lies below it. Offsets
	// passed to Release only grow. Head may stay below offset (for example
	// when storage frees whole segments only).
	Release(offset int64) error
	// Watch is called once, by NewTopic, before any other call but Open.
	// Shared storage calls wake after every change of its Tail or of a
	// commit by another process, once the change is visible to Tail and
	// Committed, and when it learns of an error that will not heal (a
	// deleted stream), which the next Read then returns. wake never blocks
	// and is safe to call from any goroutine. Storage one process owns
	// ignores it: the topic wakes its readers after its own appends.
	//
	// Why a callback and not a blocking Wait: the topic's waiters wake every
	// Pull of a partition with one atomic load per produce; a Wait per
	// blocked partition would cost remote storage a goroutine per consumer
	// partition and in-process storage a second wait path.
	Watch(wake func())
	// Seal waits for the appends in flight and makes every later Append
	// and AppendOne fail with an error matching ErrClosed. Writes returned
	// before still complete. Topic.Close calls it before Backend.Close; a
	// second call does nothing.
	Seal()
}

// Lease is a claim of partitions by one consumer (Backend.Claim).
type Lease interface {
	// Lost is closed when storage took the claim away (a renewal that did
	// not reach the server in time, so another process may claim the
	// partitions now). The consumer then stops: its Pull returns
	// ErrClaimLost instead of reading beside the new owner.
	Lost() <-chan struct{}
	// Doubt is nil while the claim is known to be held. Once storage has
	// gone a whole claim TTL without confirming it (the server unreachable,
	// or its replies lost), it is a channel closed when storage answers
	// again: either the claim was still this consumer's, and Doubt is nil
	// again, or it was not, and Lost is closed. Pull reads nothing while
	// the claim is in doubt, since another process may own the partitions
	// by then; commits go on (shared storage keeps the higher commit).
	//
	// Why not lose the claim at once: a process that could not reach the
	// server for a while (a server restart, a loaded machine) would stop
	// although nobody took its partitions, and only a restart of the whole
	// process would resume it.
	Doubt() <-chan struct{}
	// Release gives the partitions back. It is called once.
	Release() error
}

// NoLease is the Lease of storage one process owns: never lost, nothing to
// release.
var NoLease Lease = noLease{}

type noLease struct{}

func (noLease) Lost() <-chan struct{}  { return nil }
func (noLease) Doubt() <-chan struct{} { return nil }
func (noLease) Release() error         { return nil }
