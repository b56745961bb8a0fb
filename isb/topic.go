package isb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// Topic is a named, partitioned buffer queue of T. It is safe for
// concurrent use. Create one with a storage package's constructor (for
// example memory.NewTopic) or with NewTopic and a Backend.
type Topic[T any] struct {
	// Read by every produce; written only by NewTopic and Close.
	name    string
	cfg     topicConfig
	backend Backend[T]
	parts   []*partition[T]
	gate    *gate  // nil when unbounded: producers then skip capacity entirely
	rrMask  uint64 // partitions-1 when that is a power of two above 1, else 0
	closed  atomic.Bool
	done    chan struct{} // closed by Close: wakes blocked Pulls
	// ctx is the parent of every consumer's storage context; Close
	// cancels it, ending reads and commits stuck in remote storage.
	ctx    context.Context
	cancel context.CancelFunc
	// caps is what the storage declared when it opened.
	caps Caps
	// room wakes producers that wait for storage enforcing its own limits
	// to have room (see appendWhenRoom); storage changes signal it.
	room    changes
	scratch sync.Pool // *batchScratch[T], per-item routing of batches

	// The round-robin position of an unbounded topic (a bounded one keeps
	// it in gate): written by every round-robin produce, so it has a cache
	// line of its own.
	_  [64]byte
	rr atomic.Uint64

	// Written when groups and consumers come and go: kept off the cache
	// line the producers read.
	_ [64]byte
	// mu guards groups, consumers and every group's running count. known
	// is written with mu and every partition's cmu held, so it may be read
	// with either: a commit reads it under its partition's cmu alone.
	mu        sync.Mutex
	groups    map[string]*group
	known     []*group // the values of groups: commits range over a slice, not a map
	consumers map[*PullConsumer[T]]struct{}
	// io is held for reading around the Log calls of group management
	// (join, DeleteGroup). Consumers' reads and commits run under their
	// own mu instead, which Close waits for (see Close): a topic-wide
	// lock there would be shared by every consumer of every partition.
	io        sync.RWMutex
	closeOnce sync.Once
	closeErr  error
}

// partition is one Log with its writer lock and commit bookkeeping.
type partition[T any] struct {
	mu  sync.Mutex // serializes Append: the Log's single-writer guarantee (unused when Caps.Concurrent)
	log Log[T]
	// concurrent is Caps.Concurrent: the topic calls Append without mu.
	concurrent bool
	// publishMu is held for reading around the Wait of deferred writes
	// (Caps.Deferred), which Close waits for.
	publishMu sync.RWMutex
	// waiters are the consumers waiting for this partition's next append.
	waiters waiters
	_       [64]byte // keep the appenders' lock off the committers' line

	// storedHolds are the holds Retain stored in shared storage, by holder
	// (guarded by cmu).
	storedHolds map[string]int64
	// cmu guards min and every group's commit of this partition, so the
	// consumers of different partitions commit without sharing a lock.
	cmu sync.Mutex
	// min is the lowest commit over all known groups; everything below it
	// is released. With no group at all it stays at the head so items are
	// kept for a group created later.
	min int64
	// released is the highest offset passed to the log's Release (guarded
	// by cmu): min may move down when a new group starts below it, and
	// offsets passed to Release only grow.
	released int64
	// retain is the lowest offset storage must keep (guarded by cmu; see
	// Topic.Retain): Release never passes it. MaxInt64: no hold. It is the
	// lowest of holds, each holder's offset.
	retain int64
	holds  map[string]int64
	_      [64]byte // keep the next partition's locks off this cache line
}

// lockCommits locks every partition's commit bookkeeping, in partition
// order (the order every caller takes them in), for the changes that span
// partitions: a group joining or leaving the known set.
func (t *Topic[T]) lockCommits() {
	for _, pt := range t.parts {
		pt.cmu.Lock()
	}
}

func (t *Topic[T]) unlockCommits() {
	for _, pt := range t.parts {
		pt.cmu.Unlock()
	}
}

// NewTopic validates opts, opens backend for the topic and returns it.
// Storage packages call it; users usually call their constructors.
//
// The topic recovers what the backend holds: the groups of
// backend.Groups() resume from their commits, and the capacity in use
// starts at what they have not committed yet.
func NewTopic[T any](name string, backend Backend[T], opts ...TopicOption) (*Topic[T], error) {
	if err := validName("topic name", name); err != nil {
		return nil, err
	}
	cfg, err := newTopicConfig(opts)
	if err != nil {
		return nil, err
	}
	if backend == nil {
		return nil, &OptionError{Option: "backend", Value: "nil", Reason: "must not be nil"}
	}
	caps, err := backend.Open(name, cfg.partitions)
	if err != nil {
		return nil, fmt.Errorf("isb: topic %q: open storage: %w", name, err)
	}
	if caps.OwnsLimits && cfg.capacity > 0 {
		err := &OptionError{Option: "Capacity", Value: cfg.capacity,
			Reason: fmt.Sprintf("topic %q is stored where the storage enforces its own limits (shared by processes): set the limit on the storage", name)}
		return nil, closeAfter(backend, err)
	}
	t := &Topic[T]{
		name:      name,
		cfg:       cfg,
		backend:   backend,
		parts:     make([]*partition[T], cfg.partitions),
		groups:    make(map[string]*group),
		consumers: make(map[*PullConsumer[T]]struct{}),
		done:      make(chan struct{}),
		caps:      caps,
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.scratch.New = func() any { return new(batchScratch[T]) }
	if n := cfg.partitions; n > 1 && n&(n-1) == 0 {
		t.rrMask = uint64(n - 1)
	}
	for p := range t.parts {
		pt := &partition[T]{log: backend.Partition(p), concurrent: caps.Concurrent, retain: math.MaxInt64}
		t.parts[p] = pt
		// A change by another process wakes this partition's Pulls and the
		// producers waiting for room, as this process's appends do.
		pt.log.Watch(func() {
			pt.waiters.notify()
			t.room.signal()
		})
	}
	used, err := t.recoverGroups()
	if err != nil {
		return nil, closeAfter(backend, fmt.Errorf("isb: topic %q: recover groups: %w", name, err))
	}
	if cfg.capacity > 0 {
		if used > maxCapacity {
			err := fmt.Errorf("isb: topic %q: storage holds %d uncommitted items, more than a bounded topic can count (%d)", name, used, int64(maxCapacity))
			return nil, closeAfter(backend, err)
		}
		t.gate = newGate(cfg.capacity, used, cfg.partitions)
		if t.reportsStalls() {
			t.gate.stalled, t.gate.stallEvery = t.reportStall, cfg.stallAfter
		}
	}
	return t, nil
}

// closeAfter closes a backend NewTopic opened and will not use, joining
// its error to err.
func closeAfter[T any](b Backend[T], err error) error {
	if cerr := b.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	return err
}

// Caps returns what the topic's storage declared when it opened.
func (t *Topic[T]) Caps() Caps { return t.caps }

// Name returns the topic's name.
func (t *Topic[T]) Name() string { return t.name }

// Partitions returns the number of partitions.
func (t *Topic[T]) Partitions() int { return t.cfg.partitions }

// Capacity returns the capacity bound, 0 when unbounded.
func (t *Topic[T]) Capacity() int64 { return t.cfg.capacity }

// Producer returns a producer that routes with r; a nil r routes round-robin.
// Producers are cheap and safe for concurrent use.
func (t *Topic[T]) Producer(r Router[T]) *Producer[T] {
	if _, ok := r.(roundRobin[T]); ok {
		r = nil // the producer inlines round-robin
	}
	return &Producer[T]{topic: t, router: r}
}

// Pending returns how many items group has not committed yet, over all
// partitions (everything retained for a group that does not exist yet).
func (t *Topic[T]) Pending(group string) int64 {
	var n int64
	t.pending(group, func(_ int, pending int64) { n += pending })
	return n
}

// PendingByPartition appends to dst, for each partition in order, how many
// items group has not committed there yet (as Pending counts them), and
// returns dst.
func (t *Topic[T]) PendingByPartition(group string, dst []int64) []int64 {
	t.pending(group, func(_ int, pending int64) { dst = append(dst, pending) })
	return dst
}

// pending calls f with what group has not committed of each partition, in
// order, under the locks that make the counts consistent.
func (t *Topic[T]) pending(group string, f func(p int, pending int64)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lockCommits()
	defer t.unlockCommits()
	g := t.groups[group]
	for p, pt := range t.parts {
		from := pt.log.Head() // where a new group would start
		if g != nil {
			from = g.commits[p]
		}
		f(p, pt.log.Count(from, pt.log.Tail()))
	}
}

// Used returns how many items hold capacity: retained and not committed by
// every known group. It is measured on the storage (tail minus the minimum
// commit), so it never counts capacity acquired but not yet appended.
func (t *Topic[T]) Used() int64 {
	// Holding every cmu freezes every min and with it the release of
	// capacity, while tails can only grow by capacity acquired: so the
	// sum, although its tails are read one after the other, never exceeds
	// the true use at the end of the loop.
	t.lockCommits()
	defer t.unlockCommits()
	var n int64
	for _, pt := range t.parts {
		n += pt.log.Count(pt.min, pt.log.Tail())
	}
	return n
}

// Waiting returns how many producers are queued for capacity (always 0 for
// an unbounded topic).
func (t *Topic[T]) Waiting() int {
	if t.gate == nil {
		return 0
	}
	return t.gate.waiting()
}

// Close closes the topic: blocked producers and consumers return ErrClosed,
// then the backend is closed. It is idempotent; every call returns the
// result of the first.
func (t *Topic[T]) Close() error {
	t.closeOnce.Do(func() {
		// 1. Mark closed: every call from now on fails with ErrClosed.
		t.closed.Store(true)
		// 2. Wake producers queued for capacity: they return ErrClosed
		// holding no capacity.
		if t.gate != nil {
			t.gate.close()
		}
		// 3. Wake every blocked Pull (it returns ErrClosed) and end the
		// storage calls of consumers in flight.
		close(t.done)
		t.cancel()
		// 4. Wait for appends in flight and stop new ones. A producer
		// checks closed while it holds its partition's lock, so once Close
		// has held each lock no Append can run or start; a log that
		// serializes its own appends is sealed, which waits for them.
		for _, pt := range t.parts {
			if !pt.concurrent {
				pt.mu.Lock()
				pt.mu.Unlock() //nolint:staticcheck // an empty critical section is the barrier
			}
			pt.log.Seal()
		}
		// 5. Wait for the completions of deferred writes in flight: a
		// Pending's Wait checks closed under publishMu, so none starts
		// after this.
		if t.caps.Deferred {
			for _, pt := range t.parts {
				pt.publishMu.Lock()
				pt.publishMu.Unlock() //nolint:staticcheck // an empty critical section is the barrier
			}
		}
		// 6. Wait for reads, commits and releases in flight. A consumer
		// reads and commits holding its io for reading (shared storage) or
		// its mu (storage one process owns) and checks closed under it, so
		// once Close has held both of every consumer none can touch storage
		// again (one created after the snapshot below
		// finds the topic closed). Group management holds t.io for reading.
		t.mu.Lock()
		cs := make([]*PullConsumer[T], 0, len(t.consumers))
		for c := range t.consumers {
			cs = append(cs, c)
		}
		t.mu.Unlock()
		for _, c := range cs {
			c.io.Lock()
			c.io.Unlock() //nolint:staticcheck // an empty critical section is the barrier
			c.mu.Lock()
			c.mu.Unlock() //nolint:staticcheck // an empty critical section is the barrier
		}
		t.io.Lock()
		defer t.io.Unlock()
		// 7. Nothing uses the storage any more: close it.
		if err := t.backend.Close(); err != nil {
			t.closeErr = fmt.Errorf("isb: topic %q: close storage: %w", t.name, err)
		}
	})
	return t.closeErr
}
