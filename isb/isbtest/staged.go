package isbtest

import (
	"fmt"
	"math"
	"sync"

	"github.com/runnel-dev/runnel/isb"
)

// StagedBackend is a SliceBackend whose partitions stage writes
// (isb.StagedLog) and publish them only as far as the test allows: a fake
// durable storage whose flush the test holds, fails or lets through. Tests
// of callers that keep staged writes in flight (the forwarder's source)
// use it to check what they confirm before a flush and after a failed one.
//
// A Publish, and an Append (which stages and publishes), blocks until
// Allow lets its items through or Fail fails them. Close the topic only
// once nothing is blocked: Topic.Close waits for the publishes in flight.
type StagedBackend[T any] struct {
	*SliceBackend[T]
	logs     []*stagedLog[T]
	allowAll bool // AllowAll ran before Open
}

// AllowAll lets every publish of every partition through, now and later
// (before Open too): the backend then behaves as durable storage whose
// flushes always succeed.
func (b *StagedBackend[T]) AllowAll() {
	b.allowAll = true
	for p := range b.logs {
		b.Allow(p, math.MaxInt64)
	}
}

// NewStagedBackend returns an empty StagedBackend that publishes nothing
// until Allow.
func NewStagedBackend[T any]() *StagedBackend[T] {
	return &StagedBackend[T]{SliceBackend: NewSliceBackend[T]()}
}

// Open implements isb.Backend.
func (b *StagedBackend[T]) Open(topic string, partitions int) error {
	if err := b.SliceBackend.Open(topic, partitions); err != nil {
		return err
	}
	if b.logs == nil {
		for p := range partitions {
			l := &stagedLog[T]{inner: b.SliceBackend.Partition(p)}
			l.cond.L = &l.mu
			if b.allowAll {
				l.allowed = math.MaxInt64
			}
			b.logs = append(b.logs, l)
		}
	}
	return nil
}

// Partition implements isb.Backend.
func (b *StagedBackend[T]) Partition(p int) isb.Log[T] { return b.logs[p] }

// Allow lets publishes of partition through up to end (exclusive):
// waiting ones finish, later ones up to end return at once.
func (b *StagedBackend[T]) Allow(partition int, end int64) {
	l := b.logs[partition]
	l.mu.Lock()
	defer l.mu.Unlock()
	l.allowed = max(l.allowed, end)
	l.cond.Broadcast()
}

// Fail makes the flush of partition fail with err: every publish not yet
// through, and every later Stage, Append and Publish, returns it, as
// durable storage makes a failed flush sticky.
func (b *StagedBackend[T]) Fail(partition int, err error) {
	l := b.logs[partition]
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failed = fmt.Errorf("isbtest: flush of partition %d failed: %w", partition, err)
	l.cond.Broadcast()
}

// Staged returns the end of what partition holds, staged or published.
func (b *StagedBackend[T]) Staged(partition int) int64 {
	l := b.logs[partition]
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inner.Tail() + int64(len(l.pending))
}

// Writes returns how many writes (Stage and Append calls that stored
// items) partition took.
func (b *StagedBackend[T]) Writes(partition int) int {
	l := b.logs[partition]
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes
}

// Waiting returns the highest end a publish of partition waits for, or 0
// when none waits.
func (b *StagedBackend[T]) Waiting(partition int) int64 {
	l := b.logs[partition]
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiting
}

// stagedLog keeps staged items in pending until a publish moves them into
// the SliceBackend's log, where readers see them.
type stagedLog[T any] struct {
	inner isb.Log[T]

	mu      sync.Mutex
	cond    sync.Cond
	pending []T   // staged, not published: offsets inner.Tail()...
	allowed int64 // publishes up to here may finish
	waiting int64 // the highest end a blocked publish waits for
	writes  int   // Stage calls that stored items (Append stages too)
	failed  error
}

var _ isb.StagedLog[int] = (*stagedLog[int])(nil)

func (l *stagedLog[T]) Stage(items []T) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed != nil {
		return 0, l.failed
	}
	first := l.inner.Tail() + int64(len(l.pending))
	l.pending = append(l.pending, items...) // copies: the caller reuses items
	if len(items) > 0 {
		l.writes++
	}
	return first, nil
}

func (l *stagedLog[T]) Publish(end int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.failed == nil && l.allowed < end && l.inner.Tail() < end {
		l.waiting = max(l.waiting, end)
		l.cond.Wait()
	}
	if l.failed != nil {
		return l.failed
	}
	n := int(end - l.inner.Tail())
	if n <= 0 {
		return nil // an earlier publish covered it
	}
	if _, err := l.inner.Append(l.pending[:n]); err != nil {
		return err
	}
	clear(l.pending[:n])
	l.pending = l.pending[n:]
	if l.waiting <= end {
		l.waiting = 0
	}
	return nil
}

// Append stages items and publishes them, as a durable Append flushes.
func (l *stagedLog[T]) Append(items []T) (int64, error) {
	first, err := l.Stage(items)
	if err != nil {
		return 0, err
	}
	return first, l.Publish(first + int64(len(items)))
}

func (l *stagedLog[T]) Read(offset int64, max int, buf []T) ([]T, error) {
	return l.inner.Read(offset, max, buf)
}
func (l *stagedLog[T]) Head() int64 { return l.inner.Head() }
func (l *stagedLog[T]) Tail() int64 { return l.inner.Tail() }
func (l *stagedLog[T]) Commit(group string, offset int64) error {
	return l.inner.Commit(group, offset)
}
func (l *stagedLog[T]) Committed(group string) (int64, bool) { return l.inner.Committed(group) }
func (l *stagedLog[T]) Release(offset int64) error           { return l.inner.Release(offset) }
