package mmap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnel-dev/runnel/internal/fsutil"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/internal/groupset"
)

// Backend is the memory-mapped storage of one topic; it implements
// isb.Backend[T]. Create it with New and hand it to isb.NewTopic, or use
// NewTopic to do both.
type Backend[T any] struct {
	root string
	cfg  config[T]

	topicDir string
	lock     *os.File
	parts    []*partition[T]

	groups groupset.Set

	stop chan struct{}  // closed by Close to stop the interval flusher
	wg   sync.WaitGroup // the interval flusher

	// used is set by the first Open and by Close: a Backend is opened at
	// most once, so Close always releases what Open took.
	used atomic.Bool

	closeOnce sync.Once
	closeErr  error
}

var _ isb.Backend[int] = (*Backend[int])(nil)

// New validates opts and returns a backend that stores topics under dir.
// Nothing is touched on disk until Open.
func New[T any](dir string, opts ...Option) (*Backend[T], error) {
	b, _, err := newBackend[T](dir, opts, false)
	return b, err
}

func newBackend[T any](dir string, opts []Option, forNewTopic bool) (*Backend[T], []isb.TopicOption, error) {
	cfg, topicOpts, err := newConfig[T](opts, forNewTopic)
	if err != nil {
		return nil, nil, err
	}
	if dir == "" {
		return nil, nil, &isb.OptionError{Package: "mmap", Option: "dir", Value: dir, Reason: "must name a directory"}
	}
	return &Backend[T]{root: dir, cfg: cfg, stop: make(chan struct{})}, topicOpts, nil
}

// NewTopic creates (or reopens and recovers) the durable topic name under
// dir from one option list: storage options, and topic options carried by
// Topic. It is New(dir, storage options...) wrapped by isb.NewTopic(name,
// backend, topic options...):
//
//	mmap.NewTopic[Order](dir, "orders", mmap.Topic(isb.Partitions(4)), mmap.SegmentSize(64<<20))
func NewTopic[T any](dir, name string, opts ...Option) (*isb.Topic[T], error) {
	b, topicOpts, err := newBackend[T](dir, opts, true)
	if err != nil {
		return nil, err
	}
	t, err := isb.NewTopic[T](name, b, topicOpts...)
	if err != nil {
		// NewTopic may have opened the backend before failing; the
		// error is returned unchanged unless closing fails too.
		if cerr := b.Close(); cerr != nil {
			return nil, errors.Join(err, cerr)
		}
		return nil, err
	}
	return t, nil
}

// Open locks {dir}/{topic}, then opens or creates each partition and
// recovers it. A partition directory beyond the configured count is a
// *CorruptError: its data would otherwise be silently ignored. A Backend
// is opened once: a second Open after one that succeeded, or after Close,
// is ErrOpened.
func (b *Backend[T]) Open(topic string, partitions int) (isb.Caps, error) {
	if topic == "" || topic == "." || topic == ".." || strings.ContainsAny(topic, "/\x00") || len(topic) > 255 {
		return isb.Caps{}, fmt.Errorf("%w: %q must be a single path component", ErrInvalidName, topic)
	}
	if partitions < 1 {
		return isb.Caps{}, &isb.OptionError{Package: "mmap", Option: "Partitions", Value: partitions, Reason: "must be at least 1"}
	}
	if b.used.Swap(true) {
		return isb.Caps{}, fmt.Errorf("%w: Open of topic %q: a Backend opens one topic once (it was opened or closed before)", ErrOpened, topic)
	}
	if err := b.open(topic, partitions); err != nil {
		b.used.Store(false) // nothing is held: a later Open may try again
		return isb.Caps{}, err
	}
	// Writes are deferred to the flush unless Interval publishes them at
	// once; appends serialize in the partition, so writers share flushes.
	return isb.Caps{Concurrent: true, Deferred: b.cfg.flush.kind != flushInterval}, nil
}

func (b *Backend[T]) open(topic string, partitions int) error {
	b.topicDir = filepath.Join(b.root, topic)
	if _, err := fsutil.MkdirAllSynced(b.topicDir); err != nil {
		return fmt.Errorf("mmap: create topic directory: %w", err)
	}
	lock, err := fsutil.LockDir("mmap", b.topicDir, ErrLocked, errNotHere)
	if err != nil {
		return err
	}
	b.lock = lock
	if err := b.openPartitions(partitions); err != nil {
		for _, p := range b.parts {
			p.close()
		}
		b.parts = nil
		unlockDir(lock)
		b.lock = nil
		return err
	}
	if b.cfg.flush.kind == flushInterval {
		b.wg.Go(b.flushEvery)
	}
	return nil
}

func (b *Backend[T]) openPartitions(n int) error {
	entries, err := os.ReadDir(b.topicDir)
	if err != nil {
		return fmt.Errorf("mmap: read topic directory: %w", err)
	}
	highest, hasPartitions := -1, false
	for _, e := range entries {
		name := e.Name()
		if id, ok := parsePartitionDir(name); ok {
			hasPartitions = true
			highest = max(highest, id)
		}
		if id, ok := parsePartitionDir(strings.TrimSuffix(name, tmpSuffix)); ok && name == partitionDirName(id)+tmpSuffix {
			// A partition whose creation was interrupted: only this
			// package's own temporary names are removed.
			if err := os.RemoveAll(filepath.Join(b.topicDir, name)); err != nil {
				return fmt.Errorf("mmap: remove leftover: %w", err)
			}
		}
	}
	if err := b.checkMeta(n, hasPartitions); err != nil {
		return err
	}
	if highest >= n {
		return corrupt(filepath.Join(b.topicDir, partitionDirName(highest)), -1,
			"the topic is opened with %d partitions but this partition exists; open it with at least %d", n, highest+1)
	}
	for id := range n {
		p, err := b.openPartition(id)
		if err != nil {
			return err
		}
		b.parts = append(b.parts, p)
	}
	return nil
}

// flushEvery runs the Interval flush policy until Close.
func (b *Backend[T]) flushEvery() {
	t := time.NewTicker(b.cfg.flush.after)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			for _, p := range b.parts {
				// A failure is sticky in the partition: the next
				// Append or Commit returns it.
				p.flush()
			}
		}
	}
}

// Partition returns the log of partition i.
func (b *Backend[T]) Partition(i int) isb.Log[T] { return b.parts[i] }

// Groups returns the groups with a stored commit in any partition, sorted.
func (b *Backend[T]) Groups() ([]string, error) { return b.groups.Sorted(), nil }

// Claim returns isb.NoLease: the topic directory's lock keeps the storage
// to one process, whose topic keeps the claims.
func (b *Backend[T]) Claim(string, []int) (isb.Lease, error) { return isb.NoLease, nil }

// DeleteGroup removes the group's checkpoint directory, offsets/{group}/,
// from every partition and fsyncs each offsets directory, so the group is
// gone from Groups also after a reopen. A group it does not hold is not an
// error. If a partition fails the group stays listed and the call can be
// repeated: the partitions done already have nothing left to remove.
func (b *Backend[T]) DeleteGroup(group string) error {
	var errs []error
	for _, p := range b.parts {
		errs = append(errs, p.deleteGroup(group))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	b.groups.Remove(group)
	return nil
}

// Close flushes every partition, writes their producer checkpoints, unmaps
// the segments and releases the directory lock. It is idempotent.
func (b *Backend[T]) Close() error {
	b.closeOnce.Do(func() {
		b.used.Store(true)
		close(b.stop)
		b.wg.Wait()
		var errs []error
		for _, p := range b.parts {
			errs = append(errs, p.close())
		}
		if b.lock != nil {
			errs = append(errs, unlockDir(b.lock))
		}
		b.closeErr = errors.Join(errs...)
	})
	return b.closeErr
}
