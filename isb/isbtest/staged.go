package isbtest

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/runnel-dev/runnel/isb"
)

// StagedBackend is a SliceBackend whose writes are deferred
// (isb.Caps.Deferred) and complete only as far as the test allows: a fake
// durable storage whose flush the test holds, fails or lets through. Tests
// of callers that keep staged writes in flight (the forwarder's source)
// use it to check what they confirm before a flush and after a failed one.
//
// The Wait of a write blocks until Allow lets its items through or Fail
// fails them (it does not end with its context: the fake flush is not
// abandoned). Close the topic only once nothing is blocked: Topic.Close
// waits for the completions in flight.
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
func (b *StagedBackend[T]) Open(topic string, partitions int) (isb.Caps, error) {
	if _, err := b.SliceBackend.Open(topic, partitions); err != nil {
		return isb.Caps{}, err
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
	return isb.Caps{Deferred: true}, nil
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
// through, and every later Append and completion, returns it, as
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

// Writes returns how many writes (Append calls that stored items)
// partition took.
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

var (
	_ isb.Log[int]  = (*stagedLog[int])(nil)
	_ isb.Completer = (*stagedLog[int])(nil)
)

// Append stages items after everything staged before; the Write completes
// once the test allows them through.
func (l *stagedLog[T]) Append(items []T) (isb.Write, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed != nil {
		return isb.Write{}, l.failed
	}
	end := l.inner.Tail() + int64(len(l.pending)) + int64(len(items))
	l.pending = append(l.pending, items...) // copies: the caller reuses items
	if len(items) > 0 {
		l.writes++
	}
	return isb.Deferred(l, end-1), nil
}

func (l *stagedLog[T]) AppendOne(item T) (isb.Write, error) { return l.Append([]T{item}) }

// Complete publishes everything staged up to last, once allowed.
func (l *stagedLog[T]) Complete(_ context.Context, last int64) (int64, error) {
	end := last + 1
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.failed == nil && l.allowed < end && l.inner.Tail() < end {
		l.waiting = max(l.waiting, end)
		l.cond.Wait()
	}
	if l.failed != nil {
		return -1, l.failed
	}
	n := int(end - l.inner.Tail())
	if n <= 0 {
		return end - 1, nil // an earlier completion covered it
	}
	w, err := l.inner.Append(l.pending[:n])
	if err == nil {
		_, err = w.Wait(context.Background())
	}
	if err != nil {
		return -1, err
	}
	clear(l.pending[:n])
	l.pending = l.pending[n:]
	if l.waiting <= end {
		l.waiting = 0
	}
	return end - 1, nil
}

func (l *stagedLog[T]) Read(ctx context.Context, offset int64, max int, buf []T) (int64, []T, error) {
	return l.inner.Read(ctx, offset, max, buf)
}
func (l *stagedLog[T]) Head() int64                { return l.inner.Head() }
func (l *stagedLog[T]) Tail() int64                { return l.inner.Tail() }
func (l *stagedLog[T]) Count(from, to int64) int64 { return l.inner.Count(from, to) }
func (l *stagedLog[T]) Commit(ctx context.Context, group string, offset int64) error {
	return l.inner.Commit(ctx, group, offset)
}
func (l *stagedLog[T]) Committed(group string) (int64, bool, error) { return l.inner.Committed(group) }
func (l *stagedLog[T]) Release(offset int64) error                  { return l.inner.Release(offset) }
func (l *stagedLog[T]) Watch(func())                                {}

// Seal seals the slice log under it; staged writes still complete.
func (l *stagedLog[T]) Seal() { l.inner.Seal() }
