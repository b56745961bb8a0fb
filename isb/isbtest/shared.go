package isbtest

import (
	"context"
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
// it. It declares what such storage does (isb.Caps.Shared, and
// OwnsLimits with a limit): appends and commits made through any Backend,
// or from outside with Append, wake every instance's watchers; claims are
// kept in the store, across instances, as leases a test can take away
// (Expire); commits live in the store; an optional per-partition limit
// makes Append fail with an error matching isb.ErrFull.
//
// The store outlives its Backends: closing every topic and opening a new
// one resumes from what the store holds, as after a restart.
type SharedStore[T any] struct {
	limit int64 // per partition: items retained and not committed by every group; 0: none

	mu     sync.Mutex
	topic  string
	held   chan struct{}                   // non-nil while HoldReads holds reads: closed by its release
	stuck  int                             // reads waiting on held
	parts  []*sharedPart[T]                // created by the first Open
	claims map[string]map[int]*sharedLease // group -> partition -> the lease claiming it
}

// sharedPart is one partition of the store.
type sharedPart[T any] struct {
	items   []T // offsets 0..tail-1; nothing is freed (a test store)
	head    int64
	tail    atomic.Int64 // polled without the store's lock
	commits map[string]int64
	// watchers are the wake functions of the open Backends' topics.
	watchers map[*SharedBackend[T]]func()
}

// SharedOption configures a SharedStore.
type SharedOption func(*sharedConfig)

type sharedConfig struct {
	limit int64
}

// SharedLimit makes the store refuse (isb.ErrFull) an append that would
// hold more than n items in a partition that not every group committed.
func SharedLimit(n int64) SharedOption { return func(c *sharedConfig) { c.limit = n } }

// NewSharedStore returns an empty store.
func NewSharedStore[T any](opts ...SharedOption) *SharedStore[T] {
	var c sharedConfig
	if err := isb.ApplyOptions(&c, "isbtest.SharedOption", opts); err != nil {
		panic(err) // a test's own mistake: NewSharedStore returns no error
	}
	return &SharedStore[T]{limit: c.limit, claims: make(map[string]map[int]*sharedLease)}
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

// HoldReads makes every Read of the store wait, as reads from a server in
// an outage do, until release is called or the read's context ends.
func (s *SharedStore[T]) HoldReads() (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := make(chan struct{})
	s.held = held
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.held = nil
			s.mu.Unlock()
			close(held)
		})
	}
}

// WaitReadHeld returns once n reads wait on HoldReads, or when ctx ends.
func (s *SharedStore[T]) WaitReadHeld(ctx context.Context, n int) {
	for ctx.Err() == nil {
		s.mu.Lock()
		stuck := s.stuck
		s.mu.Unlock()
		if stuck >= n {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Millisecond):
		}
	}
}

// holdRead waits while reads are held; s.mu is not held.
func (s *SharedStore[T]) holdRead(ctx context.Context) error {
	s.mu.Lock()
	held := s.held
	if held != nil {
		s.stuck++
	}
	s.mu.Unlock()
	if held == nil {
		return nil
	}
	defer func() {
		s.mu.Lock()
		s.stuck--
		s.mu.Unlock()
	}()
	select {
	case <-held:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Expire takes away the claims of group's partitions, as storage does
// when a process's lease is not renewed in time: their leases are lost
// and another member may claim the partitions.
func (s *SharedStore[T]) Expire(group string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, l := range s.claims[group] {
		l.lose()
		delete(s.claims[group], p)
	}
}

// Doubt puts the claims of group's partitions in doubt, as storage does
// when it could not confirm a lease for a whole TTL (Lease.Doubt): their
// consumers read nothing until settle says whether the claims held
// (held) or were taken away (as Expire does).
func (s *SharedStore[T]) Doubt(group string) (settle func(held bool)) {
	s.mu.Lock()
	var leases []*sharedLease
	for _, l := range s.claims[group] {
		l.setDoubt(true)
		leases = append(leases, l)
	}
	s.mu.Unlock()
	return func(held bool) {
		if !held {
			s.Expire(group)
			return
		}
		for _, l := range leases {
			l.setDoubt(false)
		}
	}
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

// SharedBackend is one process's view of a SharedStore.
type SharedBackend[T any] struct {
	s      *SharedStore[T]
	mu     sync.Mutex
	logs   []isb.Log[T]
	closed bool
}

var (
	_ isb.Backend[int] = (*SharedBackend[int])(nil)
	_ isb.Log[int]     = (*sharedLog[int])(nil)
)

// Open attaches to the store, creating its partitions on the first Open;
// a later Open must name the same topic and partition count.
func (b *SharedBackend[T]) Open(topic string, partitions int) (isb.Caps, error) {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.parts == nil {
		s.topic = topic
		for range partitions {
			s.parts = append(s.parts, &sharedPart[T]{
				commits: make(map[string]int64), watchers: make(map[*SharedBackend[T]]func()),
			})
		}
	}
	if topic != s.topic || partitions != len(s.parts) {
		return isb.Caps{}, fmt.Errorf("isbtest: shared store holds topic %q with %d partitions, not %q with %d", s.topic, len(s.parts), topic, partitions)
	}
	for p := range partitions {
		b.logs = append(b.logs, &sharedLog[T]{b: b, p: p})
	}
	return isb.Caps{Shared: true, OwnsLimits: s.limit > 0}, nil
}

// Partition returns the log of partition p.
func (b *SharedBackend[T]) Partition(p int) isb.Log[T] { return b.logs[p] }

// Groups returns, sorted, the groups the store holds commits of.
func (b *SharedBackend[T]) Groups() ([]string, error) {
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
	return gs, nil
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
func (b *SharedBackend[T]) Claim(group string, partitions []int) (isb.Lease, error) {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	cl := s.claims[group]
	if cl == nil {
		cl = make(map[int]*sharedLease)
		s.claims[group] = cl
	}
	for _, p := range partitions {
		if cl[p] != nil {
			return nil, fmt.Errorf("%w: shared store: partition %d of group %q is claimed by another member", isb.ErrGroupInUse, p, group)
		}
	}
	l := &sharedLease{owner: b, lost: make(chan struct{})}
	l.release = func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, p := range partitions {
			if cl[p] == l {
				delete(cl, p)
			}
		}
		return nil
	}
	for _, p := range partitions {
		cl[p] = l
	}
	return l, nil
}

// sharedLease is one consumer's claim in the store.
type sharedLease struct {
	owner   any // the claiming *SharedBackend
	lost    chan struct{}
	lostSet bool // guarded by the store's mu
	release func() error

	doubtMu sync.Mutex
	doubt   chan struct{} // non-nil while in doubt (Doubt); guarded by doubtMu
}

func (l *sharedLease) Lost() <-chan struct{} { return l.lost }
func (l *sharedLease) Release() error        { return l.release() }

func (l *sharedLease) Doubt() <-chan struct{} {
	l.doubtMu.Lock()
	defer l.doubtMu.Unlock()
	return l.doubt
}

// setDoubt puts the lease in doubt (on) or ends its doubt (off).
func (l *sharedLease) setDoubt(on bool) {
	l.doubtMu.Lock()
	defer l.doubtMu.Unlock()
	switch {
	case on && l.doubt == nil:
		l.doubt = make(chan struct{})
	case !on && l.doubt != nil:
		close(l.doubt)
		l.doubt = nil
	}
}

// lose closes lost once and ends a doubt; the store's mu is held.
func (l *sharedLease) lose() {
	if !l.lostSet {
		l.lostSet = true
		close(l.lost)
	}
	l.setDoubt(false)
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
			if o.owner == b {
				delete(cl, p)
			}
		}
	}
	return nil
}

// sharedLog is one partition as a backend sees it.
type sharedLog[T any] struct {
	b      *SharedBackend[T]
	p      int
	sealed bool // guarded by the store's mu
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

func (l *sharedLog[T]) Append(items []T) (isb.Write, error) {
	s := l.b.s
	s.mu.Lock()
	if l.b.closed || l.sealed {
		s.mu.Unlock()
		return isb.Write{}, fmt.Errorf("isbtest: shared store: append: %w", isb.ErrClosed)
	}
	first, err := s.appendLocked(l.p, items)
	wake := s.watchersLocked(l.p)
	s.mu.Unlock()
	if err != nil {
		return isb.Write{}, err
	}
	callAll(wake)
	return isb.Completed(first + int64(len(items)) - 1), nil
}

func (l *sharedLog[T]) AppendOne(item T) (isb.Write, error) { return l.Append([]T{item}) }

// Seal makes later appends through this backend fail with isb.ErrClosed.
func (l *sharedLog[T]) Seal() {
	s := l.b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	l.sealed = true
}

func (l *sharedLog[T]) Read(ctx context.Context, offset int64, max int, buf []T) (int64, []T, error) {
	s := l.b.s
	if err := s.holdRead(ctx); err != nil {
		return offset, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pt := l.part()
	if offset < pt.head || offset >= pt.tail.Load() {
		return offset, nil, fmt.Errorf("%w: shared store: partition %d offset %d outside [%d, %d)", ErrOutOfRange, l.p, offset, pt.head, pt.tail.Load())
	}
	return offset, buf[:copy(buf[:max], pt.items[offset:])], nil
}

func (l *sharedLog[T]) Head() int64 {
	s := l.b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return l.part().head
}

func (l *sharedLog[T]) Tail() int64 { return l.part().tail.Load() }

// Count implements isb.Log: offsets are contiguous.
func (l *sharedLog[T]) Count(from, to int64) int64 { return to - from }

// Commit keeps the highest commit of group: a stale commit from one
// process never moves back what another committed.
func (l *sharedLog[T]) Commit(_ context.Context, group string, offset int64) error {
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

func (l *sharedLog[T]) Committed(group string) (int64, bool, error) {
	s := l.b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	pt := l.part()
	if off, ok := pt.commits[group]; ok {
		return off, true, nil
	}
	return pt.head, false, nil
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
