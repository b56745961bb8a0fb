package memory

import (
	"fmt"
	"sync"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/internal/groupset"
)

// Backend is the in-memory storage of one topic; it implements
// [isb.Backend]. Create it with New and hand it to isb.NewTopic, or let
// NewTopic do both.
type Backend[T any] struct {
	cfg config

	mu     sync.Mutex
	topic  string
	logs   []*Log[T] // set once by Open, read-only afterwards
	groups groupset.Set
	closed bool
}

var _ isb.Backend[int] = (*Backend[int])(nil)

// New validates opts and returns an unopened Backend. An invalid option is
// an *isb.OptionError naming it.
func New[T any](opts ...Option) (*Backend[T], error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return &Backend[T]{cfg: cfg}, nil
}

// NewTopic returns a topic named name on a new memory Backend with the
// default storage options; opts are the topic's (partitions, capacity, full
// mode). To set storage options as well, create the backend yourself:
//
//	b, err := memory.New[T](memory.SegmentSize(1024))
//	...
//	t, err := isb.NewTopic(name, b, isb.Partitions(4))
func NewTopic[T any](name string, opts ...isb.TopicOption) (*isb.Topic[T], error) {
	b, err := New[T]()
	if err != nil {
		return nil, err
	}
	return isb.NewTopic(name, b, opts...)
}

// Open creates the topic's empty partitions. A Backend can be opened once.
// Its logs are concurrent; their writes complete at once.
func (b *Backend[T]) Open(topic string, partitions int) (isb.Caps, error) {
	if partitions < 1 {
		return isb.Caps{}, &isb.OptionError{Package: "memory", Option: "Partitions", Value: partitions, Reason: "must be at least 1"}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.logs != nil || b.closed {
		return isb.Caps{}, fmt.Errorf("%w: opening topic %q, already holding %q", ErrOpened, topic, b.topic)
	}
	b.topic = topic
	logs := make([]*Log[T], partitions)
	for p := range logs {
		logs[p] = newLog[T](topic, p, b.cfg, b.groups.Add)
	}
	b.logs = logs
	return isb.Caps{Concurrent: true}, nil
}

// Partition returns the log of partition p. It panics when p is not in
// [0, partitions) or the Backend is not open: the topic never does that.
func (b *Backend[T]) Partition(p int) isb.Log[T] { return b.Log(p) }

// Log is Partition with the concrete type, for callers (and tests) that
// want the memory log itself.
func (b *Backend[T]) Log(p int) *Log[T] {
	if p < 0 || p >= len(b.logs) {
		panic(fmt.Sprintf("memory: topic %q: partition %d outside [0, %d)", b.topic, p, len(b.logs)))
	}
	return b.logs[p]
}

// Groups returns, sorted, the groups that have committed on any partition.
func (b *Backend[T]) Groups() ([]string, error) { return b.groups.Sorted(), nil }

// Claim returns isb.NoLease: memory storage belongs to one process, whose
// topic keeps the claims.
func (b *Backend[T]) Claim(string, []int) (isb.Lease, error) { return isb.NoLease, nil }

// DeleteGroup forgets group's commits on every partition and removes it
// from Groups. A group it does not hold is not an error.
func (b *Backend[T]) DeleteGroup(group string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return fmt.Errorf("memory: topic %q: delete group %q: %w", b.topic, group, isb.ErrClosed)
	}
	for _, l := range b.logs {
		l.deleteGroup(group)
	}
	b.groups.Remove(group)
	return nil
}

// Close makes every later Append, Read, Commit and Release fail with an
// error matching isb.ErrClosed. It is idempotent.
func (b *Backend[T]) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for _, l := range b.logs {
		l.close()
	}
	return nil
}
