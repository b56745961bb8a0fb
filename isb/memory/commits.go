package memory

import (
	"maps"
	"sync"
	"sync/atomic"
)

// commits holds the committed offset of each group on one partition.
//
// Commit runs on every pull under auto commit, so the common case (a group
// that has committed before) is a lock-free map lookup and an atomic
// max-store. The map itself is copy-on-write: adding a group, which happens
// once per group, takes mu and publishes a new map; so does removing one.
type commits struct {
	m  atomic.Pointer[map[string]*atomic.Int64]
	mu sync.Mutex // serialises adding and removing groups
}

// get returns the counter of group, nil if the group never committed here.
func (c *commits) get(group string) *atomic.Int64 {
	if m := c.m.Load(); m != nil {
		return (*m)[group]
	}
	return nil
}

// commit raises group's offset to at least offset (commits never move
// backwards, so a late or repeated commit is a no-op). It reports whether
// the group is new on this partition.
func (c *commits) commit(group string, offset int64) (added bool) {
	if v := c.get(group); v != nil {
		storeMax(v, offset)
		return false
	}
	return c.add(group, offset)
}

// add creates group's counter at offset, or raises it if another goroutine
// created it first. The counter is published already holding offset, so a
// concurrent reader never sees a group without its commit.
func (c *commits) add(group string, offset int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next map[string]*atomic.Int64
	if old := c.m.Load(); old != nil {
		if v := (*old)[group]; v != nil {
			storeMax(v, offset)
			return false
		}
		next = maps.Clone(*old)
	} else {
		next = make(map[string]*atomic.Int64, 1)
	}
	v := new(atomic.Int64)
	v.Store(offset)
	next[group] = v
	c.m.Store(&next)
	return true
}

// remove forgets group's counter; a group without one is left alone. Like
// add it publishes a new map, so lock-free readers never see it change.
func (c *commits) remove(group string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old == nil || (*old)[group] == nil {
		return
	}
	next := maps.Clone(*old)
	delete(next, group)
	c.m.Store(&next)
}

// storeMax raises v to x unless it is already at least x.
func storeMax(v *atomic.Int64, x int64) {
	for {
		cur := v.Load()
		if cur >= x || v.CompareAndSwap(cur, x) {
			return
		}
	}
}
