package isbtest

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnel-dev/runnel/isb"
)

// Shared is a test backend that behaves like storage shared by processes
// (a remote log such as JetStream): one SharedStore holds the data, and
// each topic instance (standing for one process) opens its own Backend on
// it. It implements every optional interface of isb for such storage:
// its logs are isb.Watched (appends and commits made through any Backend,
// or from outside with Append, wake every instance's waiters), the backend
// is an isb.Membership (claims kept in the store, across instances),
// commits live in the store, an optional per-partition limit makes Append
// fail with an error matching isb.ErrFull, and with an ack wait its logs
// are isb.AckDeadlines that record what consumers keep in progress.
//
// The store outlives its Backends: closing every topic and opening a new
// one resumes from what the store holds, as after a restart.
type SharedStore[T any] struct {
	limit   int64         // per partition: items retained and not committed by every group; 0: none
	ackWait time.Duration // 0: the logs have no ack deadlines

	mu     sync.Mutex
	topic  string
	parts  []*sharedPart[T]                     // created by the first Open
	claims map[string]map[int]*SharedBackend[T] // group -> partition -> claiming backend
}

// sharedPart is one partition of the store.
type sharedPart[T any] struct {
	items   []T // offsets 0..tail-1; nothing is freed (a test store)
	head    int64
	tail    atomic.Int64 // polled without the store's lock
	commits map[string]int64
	// watchers are the wake functions of the open Backends' topics.
	watchers map[*SharedBackend[T]]func()
	// inProgress counts InProgress calls per group; lastInProgress is the
	// last range reported.
	inProgress     map[string]int
	lastInProgress map[string][2]int64
}

// SharedOption configures a SharedStore.
type SharedOption func(*sharedConfig)

type sharedConfig struct {
	limit   int64
	ackWait time.Duration
}

// SharedLimit makes the store refuse (isb.ErrFull) an append that would
// hold more than n items in a partition that not every group committed.
func SharedLimit(n int64) SharedOption { return func(c *sharedConfig) { c.limit = n } }

// SharedAckWait gives the store's logs ack deadlines of d (isb.AckDeadlines).
func SharedAckWait(d time.Duration) SharedOption { return func(c *sharedConfig) { c.ackWait = d } }

// NewSharedStore returns an empty store.
func NewSharedStore[T any](opts ...SharedOption) *SharedStore[T] {
	var c sharedConfig
	if err := isb.ApplyOptions(&c, "isbtest.SharedOption", opts); err != nil {
		panic(err) // a test's own mistake: NewSharedStore returns no error
	}
	return &SharedStore[T]{limit: c.limit, ackWait: c.ackWait, claims: make(map[string]map[int]*SharedBackend[T])}
}

// Backend returns a new, unopened Backend on the store: what one process
// opens.
func (s *SharedStore[T]) Backend() *SharedBackend[T] { return &SharedBackend[T]{s: s} }

// Append appends items to partition p from outside any topic (another
// process's producer) and returns the offset of the first. It fails with
// isb.ErrFull as a topic's append would.
func (s *SharedStore[T]) Append(p int, items []T) (int64, error) {
	s.mu.Lock()
	if p < 0 || p >= len(s.parts) {
		s.mu.Unlock()
		return 0, fmt.Errorf("isbtest: shared store: partition %d of %d", p, len(s.parts))
	}
	first, err := s.appendLocked(p, items)
	wake := s.watchersLocked(p)
	s.mu.Unlock()
	if err == nil {
		callAll(wake)
	}
	return first, err
}

// Committed returns the commit the store holds for group in partition p.
func (s *SharedStore[T]) Committed(p int, group string) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	off, ok := s.parts[p].commits[group]
	return off, ok
}

// InProgress returns how many times consumers of group reported partition
// p in progress, and the last range they reported.
func (s *SharedStore[T]) InProgress(p int, group string) (calls int, from, to int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.parts[p].lastInProgress[group]
	return s.parts[p].inProgress[group], r[0], r[1]
}

func (s *SharedStore[T]) appendLocked(p int, items []T) (int64, error) {
	pt := s.parts[p]
	tail := pt.tail.Load()
	if s.limit > 0 {
		low := tail
		if len(pt.commits) == 0 {
			low = pt.head
		}
		for _, c := range pt.commits {
			low = min(low, c)
		}
		if used := tail - low; used+int64(len(items)) > s.limit {
			return 0, fmt.Errorf("%w: shared store: partition %d holds %d uncommitted items, limit %d, append of %d",
				isb.ErrFull, p, used, s.limit, len(items))
		}
	}
	pt.items = append(pt.items, items...)
	pt.tail.Store(tail + int64(len(items)))
	return tail, nil
}

func (s *SharedStore[T]) watchersLocked(p int) []func() {
	ws := make([]func(), 0, len(s.parts[p].watchers))
	for _, w := range s.parts[p].watchers {
		ws = append(ws, w)
	}
	return ws
}

func callAll(fs []func()) {
	for _, f := range fs {
		f()
	}
}

// SharedBackend is one process's view of a SharedStore: an isb.Backend and
// an isb.Membership.
type SharedBackend[T any] struct {
	s      *SharedStore[T]
	mu     sync.Mutex
	logs   []isb.Log[T]
	closed bool
}

var (
	_ isb.Backend[int] = (*SharedBackend[int])(nil)
	_ isb.Membership   = (*SharedBackend[int])(nil)
	_ isb.Watched      = (*sharedLog[int])(nil)
	_ isb.AckDeadlines = (*deadlineLog[int])(nil)
	_ isb.Log[int]     = (*deadlineLog[int])(nil)
)

// Open attaches to the store, creating its partitions on the first Open;
// a later Open must name the same topic and partition count.
func (b *SharedBackend[T]) Open(topic string, partitions int) error {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.parts == nil {
		s.topic = topic
		for range partitions {
			s.parts = append(s.parts, &sharedPart[T]{
				commits: make(map[string]int64), watchers: make(map[*SharedBackend[T]]func()),
				inProgress: make(map[string]int), lastInProgress: make(map[string][2]int64),
			})
		}
	}
	if topic != s.topic || partitions != len(s.parts) {
		return fmt.Errorf("isbtest: shared store holds topic %q with %d partitions, not %q with %d", s.topic, len(s.parts), topic, partitions)
	}
	for p := range partitions {
		l := &sharedLog[T]{b: b, p: p}
		if s.ackWait > 0 {
			b.logs = append(b.logs, &deadlineLog[T]{l})
		} else {
			b.logs = append(b.logs, l)
		}
	}
	return nil
}

// Partition returns the log of partition p.
func (b *SharedBackend[T]) Partition(p int) isb.Log[T] { return b.logs[p] }

// Groups returns, sorted, the groups the store holds commits of.
func (b *SharedBackend[T]) Groups() []string {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	var gs []string
	for _, pt := range s.parts {
		for g := range pt.commits {
			if !slices.Contains(gs, g) {
				gs = append(gs, g)
			}
		}
	}
	slices.Sort(gs)
	return gs
}

// DeleteGroup forgets group's commits in every partition.
func (b *SharedBackend[T]) DeleteGroup(group string) error {
	s := b.s
	s.mu.Lock()
	for _, pt := range s.parts {
		delete(pt.commits, group)
	}
	s.mu.Unlock()
	return nil
}

// Claim claims partitions of group for this backend's consumer, refusing
// (isb.ErrGroupInUse) a partition any backend of the store claimed.
func (b *SharedBackend[T]) Claim(group string, partitions []int) (func() error, error) {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	cl := s.claims[group]
	if cl == nil {
		cl = make(map[int]*SharedBackend[T])
		s.claims[group] = cl
	}
	for _, p := range partitions {
		if cl[p] != nil {
			return nil, fmt.Errorf("%w: shared store: partition %d of group %q is claimed by another member", isb.ErrGroupInUse, p, group)
		}
	}
	for _, p := range partitions {
		cl[p] = b
	}
	return func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, p := range partitions {
			if cl[p] == b {
				delete(cl, p)
			}
		}
		return nil
	}, nil
}

// Close detaches from the store: its topic is woken no more, and its
// claims end (a session that ends frees its partitions). The store keeps
// the data and commits.
func (b *SharedBackend[T]) Close() error {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	b.closed = true
	for _, pt := range s.parts {
		delete(pt.watchers, b)
	}
	for _, cl := range s.claims {
		for p, o := range cl {
			if o == b {
				delete(cl, p)
			}
		}
	}
	return nil
}

// sharedLog is one partition as a backend sees it.
type sharedLog[T any] struct {
	b *SharedBackend[T]
	p int
}

func (l *sharedLog[T]) part() *sharedPart[T] { return l.b.s.parts[l.p] }

// Watch registers wake for every change of the partition, by any backend
// or from outside.
func (l *sharedLog[T]) Watch(wake func()) {
	s := l.b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	l.part().watchers[l.b] = wake
}

func (l *sharedLog[T]) Append(items []T) (int64, error) {
	s := l.b.s
	s.mu.Lock()
	if l.b.closed {
		s.mu.Unlock()
		return 0, fmt.Errorf("isbtest: shared store: append: %w", isb.ErrClosed)
	}
	first, err := s.appendLocked(l.p, items)
	wake := s.watchersLocked(l.p)
	s.mu.Unlock()
	if err == nil {
		callAll(wake)
	}
	return first, err
}

func (l *sharedLog[T]) Read(offset int64, max int, buf []T) ([]T, error) {
	s := l.b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	pt := l.part()
	if offset < pt.head || offset >= pt.tail.Load() {
		return nil, fmt.Errorf("%w: shared store: partition %d offset %d outside [%d, %d)", ErrOutOfRange, l.p, offset, pt.head, pt.tail.Load())
	}
	return buf[:copy(buf[:max], pt.items[offset:])], nil
}

func (l *sharedLog[T]) Head() int64 {
	s := l.b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return l.part().head
}

func (l *sharedLog[T]) Tail() int64 { return l.part().tail.Load() }

// Commit keeps the highest commit of group: a stale commit from one
// process never moves back what another committed.
func (l *sharedLog[T]) Commit(group string, offset int64) error {
	s := l.b.s
	s.mu.Lock()
	pt := l.part()
	if old, ok := pt.commits[group]; !ok || offset > old {
		pt.commits[group] = offset
	}
	wake := s.watchersLocked(l.p)
	s.mu.Unlock()
	callAll(wake)
	return nil
}

func (l *sharedLog[T]) Committed(group string) (int64, bool) {
	s := l.b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	pt := l.part()
	if off, ok := pt.commits[group]; ok {
		return off, true
	}
	return pt.head, false
}

// Release lets the head advance to offset, but never past a commit the
// store holds: another process's group may still need the items.
func (l *sharedLog[T]) Release(offset int64) error {
	s := l.b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	pt := l.part()
	for _, c := range pt.commits {
		offset = min(offset, c)
	}
	pt.head = max(pt.head, min(offset, pt.tail.Load()))
	return nil
}

// deadlineLog is a sharedLog with ack deadlines.
type deadlineLog[T any] struct{ *sharedLog[T] }

func (l *deadlineLog[T]) AckWait() time.Duration { return l.b.s.ackWait }

func (l *deadlineLog[T]) InProgress(group string, from, to int64) error {
	s := l.b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	pt := l.part()
	pt.inProgress[group]++
	pt.lastInProgress[group] = [2]int64{from, to}
	return nil
}
