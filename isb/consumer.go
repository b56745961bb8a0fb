package isb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
)

// testHookBeforeArm, when set by a test, runs when Pull found nothing and
// is about to register with its partitions' waiters: the window where a
// produce must not be lost.
var testHookBeforeArm func()

// PullConsumer reads the partitions assigned to it within its group. One
// goroutine at a time may call Pull and Skip. Commit and CommitTo may be
// called from another goroutine, also while a Pull waits for data: a
// blocked Pull holds no lock, so a commit never waits for new data. Close
// may be called from any goroutine.
type PullConsumer[T any] struct {
	topic *Topic[T]
	group *group
	cfg   consumerConfig

	// mu is held by Pull (except while it waits for data), Commit, CommitTo
	// and Skip, so Close can wait for the one in flight: after Close
	// returns this consumer never commits again, and the group may get a
	// new consumer. Topic.Close waits for it too before it closes storage,
	// which is why reads and commits take no topic-wide lock.
	mu        sync.Mutex
	first     int     // assigned partitions are first..first+len(next)-1
	next      []int64 // per assigned partition: the delivered end (next offset to read)
	committed []int64 // per assigned partition: the group's commit, as last made
	last      int     // index of the partition read last: Pull starts after it
	// damaged, per assigned partition: the offset at which its last read
	// failed with ErrCorrupt, -1 if it did not. Skip steps past it.
	damaged []int64
	batch   struct {
		valid bool // a batch was delivered
		part  int
		end   int64
	}
	buf []T // Read's decode buffer, reused by every Pull

	skipped atomic.Int64 // damaged records stepped past by Skip

	// unclaim gives the consumer's partitions back to storage shared by
	// processes (Membership); nil otherwise.
	unclaim func() error
	// upkeep is the consumer's ack-deadline goroutine (see deadlines.go);
	// nil when no partition's storage has deadlines.
	upkeep *upkeep

	wake      chan struct{} // capacity 1: a producer's token for a waiting Pull (see waiters)
	closed    atomic.Bool
	done      chan struct{} // closed by Close: wakes a blocked Pull
	closeOnce sync.Once
	closeErr  error
}

// PullConsumers creates n consumers for group, splitting the partitions
// between them. A group that is new starts at the earliest retained item; a
// group with stored commits resumes from them.
//
// Consumer i gets a contiguous range of partitions; with P partitions each
// gets P/n and the first P mod n get one more (5 partitions, 2 consumers:
// [0 1 2] and [3 4]). n must be between 1 and P (an *OptionError naming
// Consumers otherwise). A group whose consumers are still open is
// ErrGroupInUse; once they are all closed the group can be opened again and
// resumes from its commits.
func (t *Topic[T]) PullConsumers(group string, n int, opts ...ConsumerOption) ([]*PullConsumer[T], error) {
	cfg, err := t.consumerConfig(group, n, opts)
	if err != nil {
		return nil, err
	}
	g, err := t.join(group, 0, t.cfg.partitions, n)
	if err != nil {
		return nil, err
	}
	cs := make([]*PullConsumer[T], n)
	for i := range cs {
		first, count := memberRange(t.cfg.partitions, n, i)
		if cs[i], err = t.newConsumer(g, cfg, first, count); err != nil {
			for _, c := range cs[:i] {
				c.Close()
			}
			t.abandon(g, first, t.cfg.partitions-first, n-i)
			return nil, err
		}
	}
	return cs, nil
}

// JoinGroup creates consumer member of members of group from this process:
// it reads the partitions that PullConsumers(group, members) gives its
// consumer number member, and the other members may run in other processes
// on storage shared by processes (or in this one). A group that is new
// starts at the earliest retained item; a known one resumes from the
// commits storage holds for the member's partitions.
//
// members must be between 1 and the partition count, and member between 0
// and members-1 (an *OptionError otherwise). A partition of the member that
// an open consumer reads already, here or (storage with Membership) in
// another process, is ErrGroupInUse.
func (t *Topic[T]) JoinGroup(group string, member, members int, opts ...ConsumerOption) (*PullConsumer[T], error) {
	cfg, err := t.consumerConfig(group, members, opts)
	if err != nil {
		return nil, err
	}
	if member < 0 || member >= members {
		return nil, &OptionError{Option: "member", Value: fmt.Sprint(member), Reason: fmt.Sprintf("must be between 0 and %d (members %d)", members-1, members)}
	}
	first, count := memberRange(t.cfg.partitions, members, member)
	g, err := t.join(group, first, count, 1)
	if err != nil {
		return nil, err
	}
	c, err := t.newConsumer(g, cfg, first, count)
	if err != nil {
		t.abandon(g, first, count, 1)
		return nil, err
	}
	return c, nil
}

// consumerConfig validates what PullConsumers and JoinGroup share: the
// group name, the number of consumers (or members) n and the options.
func (t *Topic[T]) consumerConfig(group string, n int, opts []ConsumerOption) (consumerConfig, error) {
	if group == "" {
		return consumerConfig{}, &OptionError{Option: "group name", Value: group, Reason: "must not be empty"}
	}
	P := t.cfg.partitions
	if n < 1 || n > P {
		return consumerConfig{}, consumersError(n, P)
	}
	return newConsumerConfig(P, opts)
}

// memberRange is the partitions of consumer i of n over P partitions:
// first..first+count-1, P/n each and one more for the first P mod n.
func memberRange(P, n, i int) (first, count int) {
	return i*(P/n) + min(i, P%n), P/n + btoi(i < P%n)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// abandon undoes join for consumers that were not created: their
// partitions first..first+count-1 are free again.
func (t *Topic[T]) abandon(g *group, first, count, consumers int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g.running -= consumers
	g.claim(first, count, false)
}

// newConsumer creates the consumer of g reading partitions
// first..first+count-1 from the group's commits, after claiming them in
// storage shared by processes (Membership).
func (t *Topic[T]) newConsumer(g *group, cfg consumerConfig, first, count int) (*PullConsumer[T], error) {
	c := &PullConsumer[T]{
		topic:     t,
		group:     g,
		cfg:       cfg,
		first:     first,
		next:      make([]int64, count),
		committed: make([]int64, count),
		damaged:   make([]int64, count),
		last:      count - 1, // the first Pull starts at the first partition
		buf:       make([]T, cfg.batchSize),
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	if m, ok := t.backend.(Membership); ok {
		parts := make([]int, count)
		for j := range parts {
			parts[j] = first + j
		}
		unclaim, err := m.Claim(g.name, parts)
		if err != nil {
			return nil, fmt.Errorf("isb: topic %q: group %q claims partitions %d to %d: %w", t.name, g.name, first, first+count-1, err)
		}
		c.unclaim = unclaim
	}
	t.mu.Lock() // consumers is guarded by mu, the group's commits by every cmu
	defer t.mu.Unlock()
	t.lockCommits()
	defer t.unlockCommits()
	for j := range count {
		c.committed[j] = g.commits[first+j]
		c.next[j] = c.committed[j]
		c.damaged[j] = -1
	}
	t.consumers[c] = struct{}{}
	c.startUpkeep()
	return c, nil
}

// PullConsumer creates the single consumer of group, owning every partition.
func (t *Topic[T]) PullConsumer(group string, opts ...ConsumerOption) (*PullConsumer[T], error) {
	cs, err := t.PullConsumers(group, 1, opts...)
	if err != nil {
		return nil, err
	}
	return cs[0], nil
}

// Group returns the consumer's group name.
func (c *PullConsumer[T]) Group() string { return c.group.name }

// Assigned returns the partitions this consumer owns, ascending.
func (c *PullConsumer[T]) Assigned() []int {
	ps := make([]int, len(c.next))
	for i := range ps {
		ps[i] = c.first + i
	}
	return ps
}

// Pull blocks until at least one item is available or ctx ends, and returns
// up to BatchSize items of one partition. Under auto commit it first commits
// the previous batch (also when ctx has ended already). The batch is valid
// until the next Pull or Commit.
//
// A consumer with several partitions reads them round-robin, starting after
// the one it read last and skipping empty ones. When ctx ends Pull returns
// ctx.Err(); when the consumer or the topic is closed, ErrClosed. A pull
// that returns an error delivers nothing.
//
// Reading a partition that fails (a damaged record: the error matches
// ErrCorrupt) ends that partition's turn with a *ReadError naming the
// partition and offset; the next Pull goes on with the next partition, so
// the consumer's other partitions keep flowing. The failing partition is
// tried again in its next turn; Skip steps past a damaged record.
func (c *PullConsumer[T]) Pull(ctx context.Context) (Batch[T], error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() || c.topic.closed.Load() {
		return Batch[T]{}, ErrClosed
	}
	// Calling Pull says the previous batch is done, even with a ctx that
	// has ended: commit it first.
	if !c.cfg.manualCommit {
		if err := c.commitLastLocked(); err != nil {
			return Batch[T]{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return Batch[T]{}, err
	}
	t := c.topic
	for {
		if b, ok, err := c.read(); ok || err != nil {
			return b, err
		}
		// Nothing to read: wait. arm before the re-check (see waiters).
		if testHookBeforeArm != nil {
			testHookBeforeArm()
		}
		c.arm()
		b, ok, err := c.read()
		if ok || err != nil {
			c.disarm()
			return b, err
		}
		// Wait without mu, so that Commit and CommitTo of this consumer
		// (acks of earlier batches) go through while Pull is blocked: a
		// commit never waits for data to arrive. Nothing of the consumer's
		// reading state changes meanwhile (only Pull moves it), and Close
		// still waits for whatever holds mu before storage closes: Pull
		// checks closed again once it holds mu.
		c.mu.Unlock()
		select {
		case <-c.wake:
		case <-ctx.Done():
			err = ctx.Err()
		case <-c.done:
			err = ErrClosed
		case <-t.done:
			err = ErrClosed
		}
		c.mu.Lock()
		c.disarm()
		if err != nil {
			return Batch[T]{}, err
		}
		if c.closed.Load() || t.closed.Load() {
			return Batch[T]{}, ErrClosed
		}
	}
}

// arm registers c's wake channel with the waiters of every partition it
// owns, after dropping a token left by an earlier wake-up (which would end
// the coming wait at once).
func (c *PullConsumer[T]) arm() {
	select {
	case <-c.wake:
	default:
	}
	for j := range c.next {
		c.topic.parts[c.first+j].waiters.add(c.wake)
	}
}

// disarm undoes arm.
func (c *PullConsumer[T]) disarm() {
	for j := range c.next {
		c.topic.parts[c.first+j].waiters.remove(c.wake)
	}
}

// read returns a batch of the first non-empty assigned partition after the
// one read last, or ok false when they are all empty.
func (c *PullConsumer[T]) read() (b Batch[T], ok bool, err error) {
	t := c.topic
	n := len(c.next)
	for i := 1; i <= n; i++ {
		j := (c.last + i) % n
		part, off := c.first+j, c.next[j]
		pt := t.parts[part]
		if pt.log.Tail() <= off {
			continue
		}
		// c.mu is held: Close waits for it before closing storage.
		if t.closed.Load() {
			return b, false, ErrClosed
		}
		items, err := pt.log.Read(off, c.cfg.batchSize, c.buf)
		if err != nil {
			// The error is this partition's turn: the next Pull starts
			// after it, so one damaged partition never stops the others.
			c.last = j
			c.damaged[j] = -1
			if errors.Is(err, ErrCorrupt) {
				c.damaged[j] = off
			}
			return b, false, &ReadError{Topic: t.name, Partition: part, Offset: off, Err: err}
		}
		c.damaged[j] = -1
		if len(items) == 0 {
			// The Log contract promises at least one item below Tail;
			// returning instead of skipping avoids spinning on it.
			return b, false, fmt.Errorf("%w: topic %q partition %d: storage returned no item at offset %d below its tail",
				ErrCorrupt, t.name, part, off)
		}
		c.last = j
		c.next[j] = off + int64(len(items))
		c.batch.valid, c.batch.part, c.batch.end = true, part, c.next[j]
		return Batch[T]{Partition: part, Offset: off, Items: items}, true, nil
	}
	return b, false, nil
}

// Commit commits the last pulled batch. After an empty or cancelled pull it
// commits nothing new. It is idempotent.
//
// "The last pulled batch" is the last one Pull returned: an empty or
// cancelled pull delivers nothing, so Commit then commits that same batch
// again (a no-op if it was committed) and never anything not delivered.
func (c *PullConsumer[T]) Commit() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.commitLastLocked()
}

func (c *PullConsumer[T]) commitLastLocked() error {
	if !c.batch.valid {
		if c.closed.Load() {
			return ErrClosed
		}
		return nil
	}
	return c.commitToLocked(c.batch.part, c.batch.end)
}

// CommitTo records that every offset below offset in partition is done. An
// offset at or below the current commit is a no-op; one past what was
// delivered is ErrCommitBeyondDelivered; a partition not owned is ErrNotAssigned.
func (c *PullConsumer[T]) CommitTo(partition int, offset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.commitToLocked(partition, offset)
}

func (c *PullConsumer[T]) commitToLocked(partition int, offset int64) error {
	if c.closed.Load() {
		return ErrClosed // the group may have a new consumer by now
	}
	j := partition - c.first
	if j < 0 || j >= len(c.next) {
		return fmt.Errorf("%w: partition %d (consumer of group %q owns %d to %d)",
			ErrNotAssigned, partition, c.group.name, c.first, c.first+len(c.next)-1)
	}
	if offset > c.next[j] {
		return fmt.Errorf("%w: partition %d offset %d, delivered up to %d",
			ErrCommitBeyondDelivered, partition, offset, c.next[j])
	}
	if offset <= c.committed[j] {
		return nil
	}
	if err := c.topic.commit(c.group, partition, offset); err != nil {
		return err
	}
	c.committed[j] = offset
	return nil
}

// Committed returns the group's commit of partition as this consumer knows
// it (every offset below it is done): what storage held when the consumer
// was created, or the consumer's own later commit. A reduce compares it
// with its log at start: a commit past 0 says it logged something before.
// A partition not owned is ErrNotAssigned.
func (c *PullConsumer[T]) Committed(partition int) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j := partition - c.first
	if j < 0 || j >= len(c.committed) {
		return 0, fmt.Errorf("%w: partition %d (consumer of group %q owns %d to %d)",
			ErrNotAssigned, partition, c.group.name, c.first, c.first+len(c.committed)-1)
	}
	return c.committed[j], nil
}

// Skip steps past the damaged record at which the last read of partition
// failed (a *ReadError matching ErrCorrupt), so that an operator recovers
// without editing files: the record counts as delivered, the next Pull of
// the partition reads the record after it, and it is committed at once when
// everything before it is committed (otherwise by the commit that covers
// it, as for a delivered item). It returns the skipped offset, counts it
// (Skipped) and logs it. A partition whose last read did not fail with
// ErrCorrupt is ErrNotDamaged: Skip never steps past deliverable data.
// Each call steps past one record; several damaged records in a row take
// one Skip each, each after the Pull that reports it.
func (c *PullConsumer[T]) Skip(partition int) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return 0, ErrClosed
	}
	j := partition - c.first
	if j < 0 || j >= len(c.next) {
		return 0, fmt.Errorf("%w: partition %d (consumer of group %q owns %d to %d)",
			ErrNotAssigned, partition, c.group.name, c.first, c.first+len(c.next)-1)
	}
	off := c.damaged[j]
	if off < 0 || off != c.next[j] {
		return 0, fmt.Errorf("%w: partition %d of topic %q at offset %d", ErrNotDamaged, partition, c.topic.name, c.next[j])
	}
	c.damaged[j] = -1
	c.next[j] = off + 1
	c.skipped.Add(1)
	c.cfg.log.Warn("isb: skipped a damaged record",
		zap.String("topic", c.topic.name), zap.String("group", c.group.name), zap.Int("partition", partition), zap.Int64("offset", off))
	if c.committed[j] == off {
		if err := c.commitToLocked(partition, off+1); err != nil {
			return off, err
		}
	}
	return off, nil
}

// Skipped returns how many damaged records Skip stepped past.
func (c *PullConsumer[T]) Skipped() int64 { return c.skipped.Load() }

// Close releases the consumer's partitions (the group may be consumed again,
// in this process or another) and wakes a blocked Pull with ErrClosed. It
// does not commit. Idempotent: every call returns the result of the first
// (an error only when storage shared by processes fails to take the
// partitions back).
func (c *PullConsumer[T]) Close() error {
	c.closeOnce.Do(func() {
		// 1. Mark closed and wake a blocked Pull, which then releases mu.
		c.closed.Store(true)
		close(c.done)
		// 2. Stop the ack-deadline upkeep: nothing is in progress any more.
		c.upkeep.stop()
		// 3. Wait for the Pull or commit in flight, then give the
		// partitions back.
		c.mu.Lock()
		c.closeErr = c.topic.leave(c.group, c)
		c.mu.Unlock()
	})
	return c.closeErr
}
