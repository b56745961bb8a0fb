package isbtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/runnel-dev/runnel/isb"
)

// Errors of SliceBackend. Besides storing, it checks that the topic keeps
// the Backend contract, and reports a breach with one of these.
var (
	// ErrOutOfRange is isb.ErrOutOfRange (the same value), which every
	// backend wraps for an offset it cannot serve or accept.
	ErrOutOfRange = isb.ErrOutOfRange
	// ErrBackwards is returned by a Commit or Release that moves back.
	ErrBackwards = errors.New("isbtest: offset moves backwards")
	// ErrBackendState is returned by Open on an open backend, by Open with
	// another topic or partition count than before, and by any call after
	// Close.
	ErrBackendState = errors.New("isbtest: backend used out of order")
)

// SliceBackend is the reference isb.Backend: each partition is a slice
// behind a mutex, simple enough to be obviously correct. The isb tests run
// against it, and other packages may use it as a fake.
//
// Every method of a partition takes that partition's mutex for a short
// copy, readers included: a simplification the Log contract does not allow
// production storage (readers must not wait for a writer's flush), kept
// here because the fake never does I/O.
//
// Its data and commits survive Close: opening it again (through a new
// isb.NewTopic with the same name and partition count) recovers them, as
// durable storage would. It fails any call that breaks the Backend
// contract (see the errors above) and panics on overlapping Appends to one
// partition.
type SliceBackend[T any] struct {
	mu     sync.Mutex
	topic  string
	open   bool
	opens  int
	parts  []*sliceLog[T]
	groups map[string]bool
}

// NewSliceBackend returns an empty SliceBackend.
func NewSliceBackend[T any]() *SliceBackend[T] {
	return &SliceBackend[T]{groups: make(map[string]bool)}
}

// Open implements isb.Backend.
func (b *SliceBackend[T]) Open(topic string, partitions int) (isb.Caps, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.open:
		return isb.Caps{}, fmt.Errorf("%w: Open of topic %q while open", ErrBackendState, topic)
	case b.parts == nil:
		b.topic = topic
		for range partitions {
			b.parts = append(b.parts, &sliceLog[T]{b: b, commits: make(map[string]int64)})
		}
	case b.topic != topic || len(b.parts) != partitions:
		return isb.Caps{}, fmt.Errorf("%w: reopened as topic %q with %d partitions, was %q with %d",
			ErrBackendState, topic, partitions, b.topic, len(b.parts))
	}
	for _, l := range b.parts {
		l.sealed.Store(false)
	}
	b.open = true
	b.opens++
	return isb.Caps{}, nil
}

// Partition implements isb.Backend.
func (b *SliceBackend[T]) Partition(p int) isb.Log[T] { return b.parts[p] }

// Groups implements isb.Backend: the groups with a commit, sorted.
func (b *SliceBackend[T]) Groups() ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var gs []string
	for g := range b.groups {
		gs = append(gs, g)
	}
	slices.Sort(gs)
	return gs, nil
}

// Claim implements isb.Backend: the storage belongs to one process.
func (b *SliceBackend[T]) Claim(string, []int) (isb.Lease, error) { return isb.NoLease, nil }

// DeleteGroup implements isb.Backend: it forgets group's commits on every
// partition. A group it does not hold is not an error.
func (b *SliceBackend[T]) DeleteGroup(group string) error {
	if !b.isOpen() {
		return fmt.Errorf("%w: DeleteGroup of %q while not open", ErrBackendState, group)
	}
	// Partitions first and without b.mu: Commit takes a partition's lock
	// and then b.mu (addGroup), so holding b.mu here could deadlock with a
	// commit of another group.
	for _, l := range b.parts {
		l.mu.Lock()
		delete(l.commits, group)
		l.mu.Unlock()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.groups, group)
	return nil
}

// Close implements isb.Backend. It keeps the data for a later Open.
func (b *SliceBackend[T]) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return fmt.Errorf("%w: Close while not open", ErrBackendState)
	}
	b.open = false
	return nil
}

// Opens returns how many times the backend was opened.
func (b *SliceBackend[T]) Opens() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.opens
}

func (b *SliceBackend[T]) isOpen() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open
}

func (b *SliceBackend[T]) addGroup(g string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.groups[g] = true
}

// sliceLog is one partition: items[i] has offset head+i.
type sliceLog[T any] struct {
	b         *SliceBackend[T]
	appending atomic.Bool // set during Append, to catch overlapping writers
	sealed    atomic.Bool // set by Seal, until the next Open
	mu        sync.Mutex
	head      int64
	items     []T
	commits   map[string]int64
	released  int64
	damaged   map[int64]bool // offsets whose Read fails with isb.ErrCorrupt
}

// Damage makes every later Read of offset in partition fail with an error
// matching isb.ErrCorrupt, as durable storage reports a damaged record; a
// Read from before it stops short of it. Tests of consumers use it.
func (b *SliceBackend[T]) Damage(partition int, offset int64) {
	l := b.parts[partition]
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.damaged == nil {
		l.damaged = map[int64]bool{}
	}
	l.damaged[offset] = true
}

func (l *sliceLog[T]) closedErr(op string) error {
	if l.b.isOpen() {
		return nil
	}
	return fmt.Errorf("%w: %s after Close", ErrBackendState, op)
}

func (l *sliceLog[T]) Append(items []T) (isb.Write, error) {
	if l.appending.Swap(true) {
		panic("isbtest: overlapping Append calls on one partition")
	}
	defer l.appending.Store(false)
	if err := l.closedErr("Append"); err != nil {
		return isb.Write{}, err
	}
	if l.sealed.Load() {
		return isb.Write{}, fmt.Errorf("isbtest: Append after Seal: %w", isb.ErrClosed)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append(l.items, items...) // copies: the caller reuses items
	return isb.Completed(l.head + int64(len(l.items)) - 1), nil
}

func (l *sliceLog[T]) AppendOne(item T) (isb.Write, error) { return l.Append([]T{item}) }

// Seal implements isb.Log: later Appends fail with isb.ErrClosed.
func (l *sliceLog[T]) Seal() { l.sealed.Store(true) }

// Watch implements isb.Log: nobody else appends to the backend.
func (l *sliceLog[T]) Watch(func()) {}

func (l *sliceLog[T]) Read(_ context.Context, offset int64, max int, buf []T) (int64, []T, error) {
	items, err := l.read(offset, max, buf)
	return offset, items, err
}

func (l *sliceLog[T]) read(offset int64, max int, buf []T) ([]T, error) {
	if err := l.closedErr("Read"); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	tail := l.head + int64(len(l.items))
	if offset < l.head || offset >= tail {
		return nil, fmt.Errorf("%w: Read at %d, retained [%d, %d)", ErrOutOfRange, offset, l.head, tail)
	}
	if l.damaged[offset] {
		return nil, fmt.Errorf("%w: isbtest: damaged record at offset %d", isb.ErrCorrupt, offset)
	}
	n := copy(buf[:min(max, len(buf))], l.items[offset-l.head:])
	for i := 1; i < n; i++ {
		if l.damaged[offset+int64(i)] {
			n = i
		}
	}
	return buf[:n], nil
}

func (l *sliceLog[T]) Head() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.head
}

func (l *sliceLog[T]) Tail() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.head + int64(len(l.items))
}

// Count implements isb.Log: offsets are contiguous.
func (l *sliceLog[T]) Count(from, to int64) int64 { return to - from }

func (l *sliceLog[T]) Commit(_ context.Context, group string, offset int64) error {
	if err := l.closedErr("Commit"); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.commits[group]; ok && offset < old {
		return fmt.Errorf("%w: Commit of group %q at %d below %d", ErrBackwards, group, offset, old)
	}
	if tail := l.head + int64(len(l.items)); offset > tail || offset < l.head {
		return fmt.Errorf("%w: Commit of group %q at %d, retained [%d, %d]", ErrOutOfRange, group, offset, l.head, tail)
	}
	l.commits[group] = offset
	l.b.addGroup(group)
	return nil
}

func (l *sliceLog[T]) Committed(group string) (int64, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	off, ok := l.commits[group]
	if !ok {
		return l.head, false, nil
	}
	return off, true, nil
}

// Release drops every item below offset at once, so a topic that reads
// below what it released gets ErrOutOfRange.
func (l *sliceLog[T]) Release(offset int64) error {
	if err := l.closedErr("Release"); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if offset < l.released {
		return fmt.Errorf("%w: Release at %d below %d", ErrBackwards, offset, l.released)
	}
	tail := l.head + int64(len(l.items))
	if offset > tail {
		return fmt.Errorf("%w: Release at %d past the tail %d", ErrOutOfRange, offset, tail)
	}
	for g, c := range l.commits {
		if c < offset {
			return fmt.Errorf("%w: Release at %d above the commit %d of group %q", ErrOutOfRange, offset, c, g)
		}
	}
	l.released = offset
	if offset > l.head {
		var zero T
		drop := int(offset - l.head)
		for i := range drop {
			l.items[i] = zero
		}
		l.items = l.items[drop:]
		l.head = offset
	}
	return nil
}
