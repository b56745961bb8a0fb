package isb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// group is a consumer group's progress within a topic. It outlives its
// consumers: when they all close, the group can be consumed again and
// resumes from its commits, and it keeps holding capacity and retention
// until Topic.DeleteGroup removes it.
type group struct {
	name    string
	commits []int64 // per partition; commits[p] guarded by partition p's cmu; never decreases
	running int     // open consumers; guarded by Topic.mu
	// claimed[p] is set while an open consumer of this process reads
	// partition p; guarded by Topic.mu. Storage shared by processes keeps
	// the same claims across processes (Membership).
	claimed []bool
}

// recoverGroups loads the groups the backend holds and sets every partition's
// min, returning the capacity they use (the items not committed by all).
// It runs in NewTopic, before the topic is shared.
func (t *Topic[T]) recoverGroups() (used int64, err error) {
	names, err := t.backend.Groups()
	if err != nil {
		return 0, err
	}
	for _, name := range names {
		if strings.HasPrefix(name, HoldPrefix) {
			continue // holds of writers, not a group that reads (see Retain)
		}
		g := &group{name: name, commits: make([]int64, len(t.parts)), claimed: make([]bool, len(t.parts))}
		for p, pt := range t.parts {
			off, ok, err := pt.log.Committed(name)
			if err != nil {
				return 0, fmt.Errorf("partition %d: commit of group %q: %w", p, name, err)
			}
			// Clamp into what the storage holds: a commit below the head was
			// released already, one past the tail cannot be honoured.
			if h := pt.log.Head(); !ok || off < h {
				off = h
			}
			if tl := pt.log.Tail(); off > tl {
				off = tl
			}
			g.commits[p] = off
		}
		t.addGroup(g)
	}
	for p, pt := range t.parts {
		pt.min = pt.log.Head()
		first := true
		for _, g := range t.known {
			if first || g.commits[p] < pt.min {
				pt.min, first = g.commits[p], false
			}
		}
		used += pt.log.Count(pt.min, pt.log.Tail())
	}
	return used, nil
}

// join opens group for consumers new consumers that together read
// partitions first..first+count-1, creating the group if needed. A new
// group starts at the earliest retained item, the head of each partition
// (as in BufferQueue), and its start is committed to storage, so durable
// storage knows the group from now on. Items below the other groups'
// minimum commit were released from capacity; the new group holds them
// again, so the capacity in use stays the items not committed by every
// group (producers may wait until the new group commits). A partition that
// an open consumer of the group reads already is ErrGroupInUse.
//
// On storage shared by processes (see Shared) a known group's commits of
// the joined partitions are read again from storage: another process may
// have moved them since this topic last looked.
func (t *Topic[T]) join(name string, first, count, consumers int) (*group, error) {
	t.io.RLock()
	defer t.io.RUnlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return nil, ErrClosed
	}
	g := t.groups[name]
	if g != nil {
		for p := first; p < first+count; p++ {
			if g.claimed[p] {
				return nil, fmt.Errorf("%w: group %q of topic %q (partition %d is read by an open consumer)", ErrGroupInUse, name, t.name, p)
			}
		}
		if t.caps.Shared {
			if err := t.refreshCommits(g, first, count); err != nil {
				return nil, err
			}
		}
		g.claim(first, count, true)
		g.running += consumers
		return g, nil
	}
	g = &group{name: name, commits: make([]int64, len(t.parts)), claimed: make([]bool, len(t.parts)), running: consumers}
	g.claim(first, count, true)
	// Every partition's bookkeeping stays locked until g is known: a
	// commit of another group in between would otherwise release past
	// g's start.
	t.lockCommits()
	defer t.unlockCommits()
	for p, pt := range t.parts {
		start := pt.log.Head()
		off, ok, err := pt.log.Committed(name)
		if err != nil {
			return nil, fmt.Errorf("isb: topic %q partition %d: create group %q: read its commit: %w", t.name, p, name, err)
		}
		if ok && off > start && off <= pt.log.Tail() {
			start = off
		}
		if err := pt.log.Commit(t.ctx, name, start); err != nil {
			return nil, fmt.Errorf("isb: topic %q partition %d: create group %q at offset %d: %w", t.name, p, name, start, err)
		}
		g.commits[p] = start
	}
	for p, pt := range t.parts {
		if s := g.commits[p]; s < pt.min {
			if t.gate != nil {
				t.gate.hold(pt.min - s)
			}
			pt.min = s
		}
	}
	t.addGroup(g)
	return g, nil
}

// refreshCommits raises g's commits of partitions first..first+count-1 to
// what storage holds, where another process committed past them. t.mu is
// held. Only shared storage needs it: a topic that owns its storage made
// every commit itself.
func (t *Topic[T]) refreshCommits(g *group, first, count int) error {
	for p := first; p < first+count; p++ {
		pt := t.parts[p]
		off, ok, err := pt.log.Committed(g.name)
		if err != nil {
			return fmt.Errorf("isb: topic %q partition %d: join group %q: read its commit: %w", t.name, p, g.name, err)
		}
		if !ok {
			continue
		}
		pt.cmu.Lock()
		if off > g.commits[p] && off <= pt.log.Tail() {
			g.commits[p] = off
		}
		pt.cmu.Unlock()
	}
	return nil
}

// claim marks partitions first..first+count-1 of g as read (or no longer
// read) by an open consumer. Topic.mu is held.
func (g *group) claim(first, count int, on bool) {
	for p := first; p < first+count; p++ {
		g.claimed[p] = on
	}
}

// Earliest returns the earliest retained offset of partition p: where a
// group created now starts reading it. Storage that frees whole segments
// (isb/mmap) may retain items below the other groups' commits.
func (t *Topic[T]) Earliest(p int) int64 { return t.parts[p].log.Head() }

// addGroup makes g known; t.mu and every cmu are held, or t is not shared
// yet.
func (t *Topic[T]) addGroup(g *group) {
	t.groups[g.name] = g
	t.known = append(t.known, g)
}

// DeleteGroup removes group from the topic and from its storage: an
// abandoned group otherwise holds capacity and retention forever. Every
// partition's minimum commit is recomputed over the remaining groups, the
// capacity only the deleted group held is released (queued producers are
// admitted in FIFO order) and storage may recycle what every remaining group
// has committed. With no group left nothing is released: the items are kept
// for a group created later, as before any group existed. A group created
// later under the same name starts as a new group.
//
// A group with open consumers is ErrGroupInUse; a group the topic does not
// know (never created, or deleted already) is ErrUnknownGroup. If storage
// fails to delete the group it stays known, and DeleteGroup may be called
// again.
func (t *Topic[T]) DeleteGroup(name string) error {
	t.io.RLock()
	defer t.io.RUnlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return ErrClosed
	}
	g := t.groups[name]
	if g == nil {
		return fmt.Errorf("%w: group %q of topic %q", ErrUnknownGroup, name, t.name)
	}
	if g.running > 0 {
		return fmt.Errorf("%w: cannot delete group %q of topic %q while %d consumers are open",
			ErrGroupInUse, name, t.name, g.running)
	}
	// Storage first: if it fails, the topic still accounts for the group
	// whose commits storage may still hold, and a retry finishes the job.
	if err := t.backend.DeleteGroup(name); err != nil {
		return fmt.Errorf("isb: topic %q: delete group %q: %w", t.name, name, err)
	}
	delete(t.groups, name)
	t.lockCommits()
	defer t.unlockCommits()
	t.known = slices.DeleteFunc(t.known, func(o *group) bool { return o == g })
	if len(t.known) == 0 {
		return nil // keep everything for a group created later
	}
	var errs []error
	for p := range t.parts {
		newMin := t.known[0].commits[p]
		for _, o := range t.known[1:] {
			newMin = min(newMin, o.commits[p])
		}
		if err := t.releaseTo(p, newMin); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// releaseTo advances partition p's min to newMin (if it is higher), gives
// the capacity between back to the gate and lets storage release below it.
// Its cmu is held, and whatever keeps storage open: t.io for reading, or
// the mu of the committing consumer (see Close).
func (t *Topic[T]) releaseTo(p int, newMin int64) error {
	pt := t.parts[p]
	if newMin <= pt.min {
		return nil
	}
	delta := newMin - pt.min
	pt.min = newMin
	if t.gate != nil {
		t.gate.release(delta)
	}
	return t.releaseStorage(p)
}

// releaseStorage lets storage release partition p below its min, but
// never at or past its retained offset. Its cmu is held, as for releaseTo.
func (t *Topic[T]) releaseStorage(p int) error {
	pt := t.parts[p]
	to := min(pt.min, pt.retain)
	if to <= pt.released {
		return nil // released before a new group moved min down, or held
	}
	pt.released = to
	if err := pt.log.Release(to); err != nil {
		return fmt.Errorf("isb: topic %q partition %d: release below offset %d: %w", t.name, p, to, err)
	}
	return nil
}

// Retain keeps the items of partition p at and above offset in storage on
// behalf of holder, even once every group has committed them: storage
// releases nothing at or past the lowest offset any holder retains. Each
// holder has one hold per partition, which its later Retain replaces
// (offset may move either way, but what storage released already is not
// brought back); Retain(holder, p, math.MaxInt64) removes it. The holds of
// other holders stay as they are, so several writers of one topic (a
// pipeline's source and the replicas of a map vertex) each keep what they
// must find again without knowing of each other. Capacity does not change:
// it follows the groups' commits alone.
//
// A writer that must read back what it wrote after a crash holds it this
// way (a pipeline's resumable source keeps what it wrote since it last
// saved its position, a map what it wrote for inputs not yet committed, to
// find it again, see package pipeline). The holds live in the topic, not
// in storage: set them again after a reopen, before any group commits.
//
// On storage shared by processes (Caps.Shared) a hold is also stored, as
// the commit of the group HoldPrefix+holder, so that storage releasing on
// behalf of another process's topic (which never saw the hold) keeps what
// it holds too: storage releases nothing below any stored commit. Such a
// commit never moves back (a hold set lower leaves the stored one: a
// writer moves its holds up as it goes, and a restarted one needs nothing
// below where its earlier run held), it is deleted when the holder's last hold is removed, and it
// counts for neither capacity nor the groups a topic recovers. A holder
// that dies keeps its holds stored until it sets them again.
func (t *Topic[T]) Retain(holder string, p int, offset int64) error {
	if p < 0 || p >= len(t.parts) {
		return fmt.Errorf("%w: partition %d of topic %q, want 0 <= p < %d", ErrInvalidKey, p, t.name, len(t.parts))
	}
	t.io.RLock()
	defer t.io.RUnlock()
	if t.closed.Load() {
		return ErrClosed
	}
	pt := t.parts[p]
	held, err := t.retainLocal(pt, p, holder, offset)
	if err != nil || !t.caps.Shared {
		return err
	}
	switch {
	case offset != math.MaxInt64:
		if !pt.storeHold(holder, offset) {
			return nil // stored already: a stored hold never moves back
		}
		if err := pt.log.Commit(t.ctx, HoldPrefix+holder, offset); err != nil {
			return fmt.Errorf("isb: topic %q partition %d: store the hold of %q at offset %d: %w", t.name, p, holder, offset, err)
		}
	case !held:
		for _, q := range t.parts {
			q.cmu.Lock()
			delete(q.storedHolds, holder)
			q.cmu.Unlock()
		}
		if err := t.backend.DeleteGroup(HoldPrefix + holder); err != nil {
			return fmt.Errorf("isb: topic %q: delete the stored holds of %q: %w", t.name, holder, err)
		}
	}
	return nil
}

// storeHold reports whether holder's hold at offset is above what the
// topic stored of it, and records it as stored.
func (pt *partition[T]) storeHold(holder string, offset int64) bool {
	pt.cmu.Lock()
	defer pt.cmu.Unlock()
	if prev, ok := pt.storedHolds[holder]; ok && offset <= prev {
		return false
	}
	if pt.storedHolds == nil {
		pt.storedHolds = map[string]int64{}
	}
	pt.storedHolds[holder] = offset
	return true
}

// HoldPrefix starts the group names under which a topic on shared storage
// stores its holds (see Retain): group names starting with it are
// reserved.
const HoldPrefix = "isb.hold/"

// retainLocal sets holder's hold of partition pt in the topic and lets
// storage release below the holds; held reports whether holder still
// holds any partition.
func (t *Topic[T]) retainLocal(pt *partition[T], p int, holder string, offset int64) (held bool, err error) {
	pt.cmu.Lock()
	if offset == math.MaxInt64 {
		delete(pt.holds, holder)
	} else {
		if pt.holds == nil {
			pt.holds = map[string]int64{}
		}
		pt.holds[holder] = offset
	}
	pt.retain = math.MaxInt64
	for _, off := range pt.holds {
		pt.retain = min(pt.retain, off)
	}
	err = t.releaseStorage(p)
	pt.cmu.Unlock()
	for _, q := range t.parts {
		q.cmu.Lock()
		_, h := q.holds[holder]
		q.cmu.Unlock()
		held = held || h
	}
	return held, err
}

// leave records that consumer c of g closed: its partitions may be read
// by a new consumer, in this process and (shared storage) in others.
func (t *Topic[T]) leave(g *group, c *PullConsumer[T]) error {
	t.mu.Lock()
	g.running--
	g.claim(c.first, len(c.next), false)
	delete(t.consumers, c)
	t.mu.Unlock()
	if err := c.lease.Release(); err != nil {
		return fmt.Errorf("isb: topic %q: group %q leaves partitions %d to %d: %w", t.name, g.name, c.first, c.first+len(c.next)-1, err)
	}
	return nil
}

// commit stores g's commit of partition p at off (off greater than the
// group's commit, at most what its consumer was delivered), then advances
// the partition's min: capacity and storage are released as far as every
// known group has committed. The committing consumer holds its io, which
// Close waits for, and only partition p's bookkeeping is locked: consumers
// of different partitions commit independently.
func (t *Topic[T]) commit(ctx context.Context, g *group, p int, off int64) error {
	if t.closed.Load() {
		return ErrClosed
	}
	pt := t.parts[p]
	// Durable storage persists the commit here; the group's consumer
	// serializes calls for its partitions, so they never overlap.
	if err := pt.log.Commit(ctx, g.name, off); err != nil {
		return fmt.Errorf("isb: topic %q partition %d: commit of group %q at offset %d: %w", t.name, p, g.name, off, err)
	}

	pt.cmu.Lock()
	defer pt.cmu.Unlock()
	old := g.commits[p]
	if off <= old {
		return nil
	}
	g.commits[p] = off
	if old != pt.min {
		return nil // another group is behind: the min does not move
	}
	newMin := off
	for _, o := range t.known {
		newMin = min(newMin, o.commits[p])
	}
	return t.releaseTo(p, newMin)
}
