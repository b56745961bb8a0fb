// Package groupset holds the set of consumer groups a storage backend has
// seen commit, shared by isb/memory and isb/mmap so that both answer
// Backend.Groups the same way.
package groupset

import (
	"maps"
	"slices"
	"sync"
)

// Set is a set of group names, safe for concurrent use. The zero value is
// empty and ready to use.
type Set struct {
	mu sync.Mutex
	m  map[string]struct{}
}

// Add records group; adding it again changes nothing.
func (s *Set) Add(group string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]struct{})
	}
	s.m[group] = struct{}{}
}

// Remove forgets group; removing a group the set does not hold changes
// nothing.
func (s *Set) Remove(group string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, group)
}

// Sorted returns the groups in ascending order, in a new slice the caller
// owns (never nil, so an empty set encodes as [] rather than null).
func (s *Set) Sorted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	gs := slices.AppendSeq(make([]string, 0, len(s.m)), maps.Keys(s.m))
	slices.Sort(gs)
	return gs
}
