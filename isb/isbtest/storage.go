package isbtest

import (
	"testing"

	"github.com/runnel-dev/runnel/isb"
)

// Storage is a storage under test for RunStorage: a place that Backends
// open (a directory, a SharedStore, memory).
type Storage struct {
	// New returns an unopened Backend on this storage. It is the suite's
	// reopen step: a Backend New returns after the previous one was closed
	// finds what that one kept, as a process does after a restart, when
	// Durable is set.
	New func() (isb.Backend[Item], error)
	// Durable says whether storage outlives its Backend. When it does not
	// (isb/memory), the reopen checks are skipped.
	Durable bool
	// Sparse says that the storage leaves offsets unused between appends
	// (isb/jetstream's Packed streams: offsets jump from one frame to the
	// next), as isb.Log allows. The suites then check that offsets only
	// grow (a batch at or past where the last one ended, a write's last
	// offset at or past the count of items before it) instead of equal to
	// a count of items; what they check of the items (contents, order,
	// exactly once) is the same.
	Sparse bool
}

// StorageFactory returns a fresh, empty Storage; it registers cleanup
// (removing files) with t.
type StorageFactory func(t testing.TB) Storage

// RunStorage runs every suite against the storage f makes: the Log-level
// contract (LogContract), the topic behaviour suite (Run) on topics made
// with isb.NewTopic over f's Backends, and, for durable storage, the
// restart checks (Reopen): what was produced and committed before a
// restart is what a topic opened afterwards resumes from.
func RunStorage(t *testing.T, f StorageFactory) {
	t.Run("Log", func(t *testing.T) { LogContract(t, f) })
	t.Run("Topic", func(t *testing.T) { run(t, TopicFactory(f), f(t).Sparse) })
	t.Run("Reopen", func(t *testing.T) { Reopen(t, f) })
}

// TopicFactory is the Factory of topics on fresh storage from f, closed at
// cleanup.
func TopicFactory(f StorageFactory) Factory {
	return func(t testing.TB, name string, opts ...isb.TopicOption) (*isb.Topic[Item], error) {
		b, err := f(t).New()
		if err != nil {
			return nil, err
		}
		tp, err := isb.NewTopic(name, b, opts...)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() {
			if err := tp.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return tp, nil
	}
}

// open opens a new Backend of s for topic with partitions, failing t.
func (s Storage) open(t *testing.T, topic string, partitions int) isb.Backend[Item] {
	t.Helper()
	b, _ := s.openCaps(t, topic, partitions)
	return b
}

// openCaps is open that also returns what the storage declared.
func (s Storage) openCaps(t *testing.T, topic string, partitions int) (isb.Backend[Item], isb.Caps) {
	t.Helper()
	b, err := s.New()
	if err != nil {
		t.Fatalf("new backend: %v", err)
	}
	caps, err := b.Open(topic, partitions)
	if err != nil {
		t.Fatalf("Open(%q, %d): %v", topic, partitions, err)
	}
	return b, caps
}

// topic opens a topic on a new Backend of s, failing t.
func (s Storage) topic(t *testing.T, name string, opts ...isb.TopicOption) *isb.Topic[Item] {
	t.Helper()
	b, err := s.New()
	if err != nil {
		t.Fatalf("new backend: %v", err)
	}
	tp, err := isb.NewTopic(name, b, opts...)
	if err != nil {
		skipOwnLimits(t, err)
		t.Fatalf("NewTopic(%q): %v", name, err)
	}
	return tp
}
