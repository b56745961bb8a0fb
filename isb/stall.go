package isb

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
)

// Stall reports: a wait that does not end by itself is said in the log
// (TopicLogger), every StallReport while it lasts, with what holds it.
//
// A producer blocked on a full topic waits for the slowest group's
// commits: the report names the groups by how much they have not
// committed. A Pull that waits for data while producers wait for capacity
// and its own consumer holds items it read and did not commit waits for
// itself (a manual-commit consumer committing every 8 batches of 500 on
// Capacity(5000) waited 583 s in silence): the report says so.

// reportsStalls reports whether the topic logs stalls: its logger is
// enabled at warn level (the reports cost a timer per wait otherwise).
func (t *Topic[T]) reportsStalls() bool { return t.cfg.log.Core().Enabled(zap.WarnLevel) }

// reportStall logs a producer that has waited for want units of
// capacity (the gate calls it every StallReport while it waits).
func (t *Topic[T]) reportStall(want int64, waited time.Duration) {
	t.cfg.log.Warn("isb: a producer waits for capacity on a full topic",
		zap.String("topic", t.name), zap.Duration("waited", waited.Round(time.Millisecond)),
		zap.Int64("wants", want), zap.Int64("capacity", t.cfg.capacity), zap.Int64("used", t.Used()),
		zap.Int("producersWaiting", t.Waiting()), zap.Strings("groupsByUncommitted", t.holders(5)))
}

// reportStorageFull logs a producer that storage enforcing its own limits
// (Caps.OwnsLimits) has refused for waited, with the storage's reason.
func (t *Topic[T]) reportStorageFull(part int, waited time.Duration, reason error) {
	t.cfg.log.Warn("isb: a producer waits for room in storage that is full",
		zap.String("topic", t.name), zap.Int("partition", part), zap.Duration("waited", waited.Round(time.Millisecond)),
		zap.Error(reason), zap.Strings("groupsByUncommitted", t.holders(5)))
}

// holders describes the groups holding the most uncommitted items, at
// most n, most first: "billing: 5000 uncommitted (partition 0: commit 0,
// tail 5000)", the partitions with the most of it first, at most 4.
func (t *Topic[T]) holders(n int) []string {
	type part struct{ p, commit, tail, n int64 }
	type held struct {
		name  string
		total int64
		parts []part
	}
	t.mu.Lock()
	t.lockCommits()
	var hs []held
	for name, g := range t.groups {
		h := held{name: name}
		for p, pt := range t.parts {
			tail := pt.log.Tail()
			if d := pt.log.Count(g.commits[p], tail); d > 0 {
				h.total += d
				h.parts = append(h.parts, part{int64(p), g.commits[p], tail, d})
			}
		}
		hs = append(hs, h)
	}
	t.unlockCommits()
	t.mu.Unlock()
	slices.SortFunc(hs, func(a, b held) int { return cmp.Or(cmp.Compare(b.total, a.total), cmp.Compare(a.name, b.name)) })
	out := make([]string, 0, min(n, len(hs)))
	for _, h := range hs[:min(n, len(hs))] {
		slices.SortFunc(h.parts, func(a, b part) int { return cmp.Compare(b.n, a.n) })
		s := fmt.Sprintf("%s: %d uncommitted", h.name, h.total)
		for i, p := range h.parts[:min(4, len(h.parts))] {
			sep := ", "
			if i == 0 {
				sep = " ("
			}
			s += fmt.Sprintf("%spartition %d: commit %d, tail %d", sep, p.p, p.commit, p.tail)
		}
		if len(h.parts) > 0 {
			s += ")"
		}
		out = append(out, s)
	}
	return out
}

// reportPullStall logs a Pull of c that has waited for data for waited
// while producers wait for capacity, when c holds items it read and has
// not committed: nothing but its own commit can end both waits.
func (c *PullConsumer[T]) reportPullStall(waited time.Duration) {
	t := c.topic
	if t.gate == nil || t.gate.waiting() == 0 {
		return
	}
	held := c.uncommitted()
	if held == 0 {
		return
	}
	t.cfg.log.Warn("isb: a Pull waits for data while producers wait for capacity its consumer holds: commit what it has processed",
		zap.String("topic", t.name), zap.String("group", c.group.name), zap.Ints("partitions", c.Assigned()),
		zap.Duration("waited", waited.Round(time.Millisecond)), zap.Int64("readNotCommitted", held),
		zap.Int64("capacity", t.cfg.capacity), zap.Int("producersWaiting", t.Waiting()))
}

// uncommitted is how many items c has delivered and not committed.
func (c *PullConsumer[T]) uncommitted() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for i := range c.next {
		n += c.next[i] - c.committed[i]
	}
	return n
}
