package pipeline

import (
	"context"
	"fmt"
	"sync"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/codec"
	"github.com/runnel-dev/runnel/vertex"
)

// encodedBackend is a backend of vertex.Message[T] on a storage's backend
// of encoded messages (Storage.OpenBuffer): it encodes what is appended
// and decodes what is read with the envelope codec, and passes everything
// else through. A record that does not decode is reported as the storage's
// damaged records are (an error matching isb.ErrCorrupt at its offset), so
// the consumer steps over it and the rest of the partition flows.
type encodedBackend[T any] struct {
	raw   isb.Backend[[]byte]
	codec codec.Codec[vertex.Message[T]]

	// Open is called twice, by openTopicBackend (to learn the caps) and by
	// NewTopic; the storage's Open runs once.
	openOnce sync.Once
	caps     isb.Caps
	openErr  error
	logs     []*encodedLog[T]
}

func newEncodedBackend[T any](raw isb.Backend[[]byte], c codec.Codec[vertex.Message[T]]) *encodedBackend[T] {
	return &encodedBackend[T]{raw: raw, codec: c}
}

func (b *encodedBackend[T]) Open(topic string, partitions int) (isb.Caps, error) {
	b.openOnce.Do(func() {
		b.caps, b.openErr = b.raw.Open(topic, partitions)
		if b.openErr != nil {
			return
		}
		b.logs = make([]*encodedLog[T], partitions)
		for p := range b.logs {
			l := &encodedLog[T]{raw: b.raw.Partition(p), codec: b.codec, partition: p}
			l.pool.New = func() any { return new(encodeScratch) }
			b.logs[p] = l
		}
	})
	return b.caps, b.openErr
}

func (b *encodedBackend[T]) Partition(p int) isb.Log[vertex.Message[T]] { return b.logs[p] }
func (b *encodedBackend[T]) Groups() ([]string, error)                  { return b.raw.Groups() }
func (b *encodedBackend[T]) DeleteGroup(group string) error             { return b.raw.DeleteGroup(group) }
func (b *encodedBackend[T]) Close() error                               { return b.raw.Close() }

func (b *encodedBackend[T]) Claim(group string, partitions []int) (isb.Lease, error) {
	return b.raw.Claim(group, partitions)
}

// encodedLog is one partition of an encodedBackend.
type encodedLog[T any] struct {
	raw       isb.Log[[]byte]
	codec     codec.Codec[vertex.Message[T]]
	partition int
	pool      sync.Pool // *encodeScratch: appends may run concurrently (Caps.Concurrent)

	readMu sync.Mutex // the topic reads a partition from one consumer at a time; this keeps rbuf safe if not
	rbuf   [][]byte
}

// encodeScratch is what appends reuse: the slice of encoded items. The
// bytes themselves are a new array per append, as storage may keep the
// slices it is given (memory does) instead of copying them.
type encodeScratch struct {
	items [][]byte
	ends  []int
	size  int // the last append's encoded size, to size the next array
}

func (l *encodedLog[T]) Append(items []vertex.Message[T]) (isb.Write, error) {
	sc := l.pool.Get().(*encodeScratch)
	defer l.pool.Put(sc)
	arena := make([]byte, 0, max(sc.size, 64*len(items)))
	sc.ends = sc.ends[:0]
	for i := range items {
		var err error
		if arena, err = l.codec.Append(arena, items[i]); err != nil {
			return isb.Write{}, fmt.Errorf("pipeline: encode message %d of %d for partition %d: %w", i, len(items), l.partition, err)
		}
		sc.ends = append(sc.ends, len(arena))
	}
	// Sliced once the arena has stopped moving (an append that grows it
	// copies it elsewhere).
	sc.items = sc.items[:0]
	start := 0
	for _, end := range sc.ends {
		sc.items = append(sc.items, arena[start:end:end])
		start = end
	}
	sc.size = len(arena)
	w, err := l.raw.Append(sc.items) // the Log contract lets the caller reuse the slice
	clear(sc.items)
	return w, err
}

func (l *encodedLog[T]) AppendOne(item vertex.Message[T]) (isb.Write, error) {
	return l.Append([]vertex.Message[T]{item})
}

func (l *encodedLog[T]) Read(ctx context.Context, offset int64, max int, buf []vertex.Message[T]) (int64, []vertex.Message[T], error) {
	l.readMu.Lock()
	defer l.readMu.Unlock()
	if cap(l.rbuf) < max {
		l.rbuf = make([][]byte, max)
	}
	first, raw, err := l.raw.Read(ctx, offset, max, l.rbuf[:max])
	// Decoded in place: a caller may have set up buf's elements for the
	// decode (the map's read-back gives each one a slot for its origin,
	// see map_resume.go).
	out := buf[:len(raw)]
	for i, r := range raw {
		if derr := l.codec.Decode(r, &out[i]); derr != nil {
			// What decoded before it is delivered; the next read starts at
			// the damaged record, which the consumer then steps over.
			clear(raw)
			return first, out[:i], &decodeError{partition: l.partition, offset: first + int64(i), codec: l.codec.Name(), err: derr}
		}
	}
	clear(raw)
	return first, out, err
}

func (l *encodedLog[T]) Head() int64                { return l.raw.Head() }
func (l *encodedLog[T]) Tail() int64                { return l.raw.Tail() }
func (l *encodedLog[T]) Count(from, to int64) int64 { return l.raw.Count(from, to) }
func (l *encodedLog[T]) Commit(ctx context.Context, group string, offset int64) error {
	return l.raw.Commit(ctx, group, offset)
}
func (l *encodedLog[T]) Committed(group string) (int64, bool, error) { return l.raw.Committed(group) }
func (l *encodedLog[T]) Release(offset int64) error                  { return l.raw.Release(offset) }
func (l *encodedLog[T]) Watch(wake func())                           { l.raw.Watch(wake) }
func (l *encodedLog[T]) Seal()                                       { l.raw.Seal() }

// decodeError is a record of a buffer on outside storage that the envelope
// codec refused: damaged, or written with another codec.
type decodeError struct {
	partition int
	offset    int64
	codec     string
	err       error
}

func (e *decodeError) Error() string {
	return fmt.Sprintf("pipeline: partition %d offset %d: decode with %s: %v", e.partition, e.offset, e.codec, e.err)
}
func (e *decodeError) Unwrap() error        { return e.err }
func (e *decodeError) Is(target error) bool { return target == isb.ErrCorrupt }
