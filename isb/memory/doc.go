// Package memory is the in-memory storage of the isb: runnel's fast,
// production default. It implements [isb.Backend]; [NewTopic] returns a
// ready *isb.Topic backed by it.
//
// # Layout
//
// Each partition is a log of fixed-size segments (SegmentSize items each).
// The log grows by one segment at a time under load and recycles segments
// that every known consumer group has committed: [Log.Release] moves the
// head, and the next time the writer needs a segment it takes back every
// segment lying wholly below the head, clears it (so values it referenced can
// be collected) and keeps up to MaxFreeSegments of them on a free list for
// reuse. A producer that keeps pace with its consumers therefore reuses the
// same few segments and allocates nothing.
//
// # Concurrency
//
// A Log serializes its own appends, so the topic calls it without a lock of
// its own ([isb.Caps] Concurrent): the tail and the appenders' lock share one
// atomic word. An append takes the lock with a compare-and-swap, fills its
// slots, and publishes the new tail and drops the lock with one swap: two
// atomic operations on one cache line per append, as many as a Go channel
// send pays. An appender that finds the lock held spins briefly and then
// parks until the holder's unlock wakes it. Read, Head, Tail, Commit,
// Committed and Release never take that lock: a reader loads the word, and
// every slot below the tail it holds was written before that tail was
// published, so it always sees complete items. Segments are found through a power-of-two ring
// of atomic segment pointers indexed by offset/SegmentSize: a Read costs one
// division and a handful of atomic loads (plain loads on amd64 and arm64),
// whatever the number of segments and without any per-reader state. The ring
// only grows (by doubling, when more segments are live than it has slots; a
// slot is one pointer); readers holding an older ring still find every live
// segment in it.
//
// # Aliasing
//
// Read returns a slice of the segment itself: no copy, no allocation, and
// never crossing a segment boundary (a pull may therefore return fewer items
// than asked for at a boundary). The slice is valid until the consumer's next
// Pull or Commit: after that its group may release the offsets and the
// segment may be recycled and overwritten. Copy what must live longer. The
// slice's capacity is clipped to its length, so appending to it copies
// instead of writing into storage.
//
// # Commits
//
// Commits are kept in memory only: a restarted process starts empty.
// [Backend.Groups] lists every group that has committed on any partition
// and has not been deleted ([Backend.DeleteGroup]).
package memory
