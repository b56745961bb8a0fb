package isb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// testHookBeforeArm, when set by a test, runs when Pull found nothing and
// is about to register with its partitions' waiters: the window where a
// produce must not be lost.
var testHookBeforeArm func()

// PullConsumer reads the partitions assigned to it within its group. One
// goroutine at a time may call Pull and Skip. Commit and CommitTo may be
// called from another goroutine, also while a Pull waits for data or reads:
// no call to storage runs under the lock of the consumer's state, so a
// commit never waits for new data, nor for a read stuck in an outage of
// remote storage. Close may be called from any goroutine; it ends the
// storage calls in flight (their context) and waits for them.
type PullConsumer[T any] struct {
	topic *Topic[T]
	group *group
	cfg   consumerConfig

	// ctx is passed to storage calls; Close and Topic.Close cancel it.
	ctx    context.Context
	cancel context.CancelFunc
	// On shared storage io is held for reading around every storage call
	// (Read, Commit), and mu is not: Close waits for io once it cancelled
	// ctx, so after Close returns this consumer never touches storage
	// again and the group may get a new consumer. Storage one process owns
	// is called under mu instead (it waits for nothing remote), which Close
	// waits for as well. Topic.Close waits for both before it closes
	// storage, which is why reads and commits take no topic-wide lock.
	io sync.RWMutex
	// commitMu serializes commits on shared storage (Log.Commit of one
	// group and partition never overlaps), outside mu.
	commitMu sync.Mutex
	// lease is the consumer's claim of its partitions on shared storage
	// (NoLease otherwise); Pull stops with ErrClaimLost when it is lost.
	lease Lease

	// mu guards the reading state below. On shared storage it is held only
	// between storage calls, never across one.
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
// storage shared by processes (Caps.Shared).
func (t *Topic[T]) newConsumer(g *group, cfg consumerConfig, first, count int) (*PullConsumer[T], error) {
	c := &PullConsumer[T]{
		lease:     NoLease,
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
	if t.caps.Shared {
		parts := make([]int, count)
		for j := range parts {
			parts[j] = first + j
		}
		lease, err := t.backend.Claim(g.name, parts)
		if err != nil {
			return nil, fmt.Errorf("isb: topic %q: group %q claims partitions %d to %d: %w", t.name, g.name, first, first+count-1, err)
		}
		c.lease = lease
	}
	t.mu.Lock() // consumers is guarded by mu, the group's commits by every cmu
	defer t.mu.Unlock()
	if t.closed.Load() {
		c.lease.Release() //nolint:errcheck // the topic is closing: its storage ends the claims
		return nil, ErrClosed
	}
	c.ctx, c.cancel = context.WithCancel(t.ctx)
	t.lockCommits()
	defer t.unlockCommits()
	for j := range count {
		c.committed[j] = g.commits[first+j]
		c.next[j] = c.committed[j]
		c.damaged[j] = -1
	}
	t.consumers[c] = struct{}{}
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
// ctx.Err(); when the consumer or the topic is closed, ErrClosed; when
// shared storage took the consumer's claim away, ErrClaimLost. A pull that
// returns an error delivers nothing.
//
// Reading a partition that fails (a damaged record: the error matches
// ErrCorrupt) ends that partition's turn with a *ReadError naming the
// partition and offset; the next Pull goes on with the next partition, so
// the consumer's other partitions keep flowing. The failing partition is
// tried again in its next turn; Skip steps past a damaged record.
func (c *PullConsumer[T]) Pull(ctx context.Context) (Batch[T], error) {
	if err := c.usable(); err != nil {
		return Batch[T]{}, err
	}
	t := c.topic
	if !t.caps.Shared {
		// Storage one process owns: the commit of the last batch and the
		// first read under one hold of mu, the whole cost of a Pull that
		// finds data.
		c.mu.Lock()
		b, ok, err := c.commitAndRead(ctx)
		c.mu.Unlock()
		if ok || err != nil {
			return b, err
		}
	} else {
		// Calling Pull says the previous batch is done, even with a ctx
		// that has ended: commit it first.
		if !c.cfg.manualCommit {
			if err := c.Commit(); err != nil {
				return Batch[T]{}, err
			}
		}
		if err := ctx.Err(); err != nil {
			return Batch[T]{}, err
		}
	}
	var timers pullTimers
	defer timers.stop()
	for {
		if t.caps.Shared {
			if held, err := c.awaitClaim(ctx, &timers); !held || err != nil {
				return Batch[T]{}, err
			}
		}
		if b, ok, err := c.read(ctx); ok || err != nil {
			return b, err
		}
		// Nothing to read: wait. arm before the re-check (see waiters).
		if testHookBeforeArm != nil {
			testHookBeforeArm()
		}
		c.arm()
		b, ok, err := c.read(ctx)
		if ok || err != nil {
			c.disarm()
			return b, err
		}
		timers.start(c.cfg.maxWait, c.stallEvery())
		// Nothing of the consumer's reading state changes while it waits
		// (only Pull and Skip move it, from this goroutine), and Commit and
		// CommitTo of earlier batches go through meanwhile.
	wait:
		for {
			select {
			case <-c.wake:
			case <-ctx.Done():
				err = ctx.Err()
			case <-c.done:
				err = ErrClosed
			case <-t.done:
				err = ErrClosed
			case <-c.lease.Lost():
				err = c.lostErr()
			case <-timers.maxWait.C:
				c.disarm()
				return Batch[T]{}, nil // MaxWait: nothing came
			case <-timers.stall.C:
				c.reportPullStall(time.Since(timers.began))
				timers.stall.Reset(t.cfg.stallAfter)
				continue wait
			}
			break
		}
		c.disarm()
		if err != nil {
			return Batch[T]{}, err
		}
		if err := c.usable(); err != nil {
			return Batch[T]{}, err
		}
	}
}

// awaitClaim waits while shared storage is in doubt whether the
// consumer's claim still holds (Lease.Doubt), so that it never reads
// beside a process that may own its partitions by now. It reports held
// once the claim is confirmed, and false with a nil error when MaxWait
// ended first; ErrClaimLost once the claim is lost, ErrClosed or ctx's
// error when those end the wait.
func (c *PullConsumer[T]) awaitClaim(ctx context.Context, timers *pullTimers) (held bool, err error) {
	for {
		doubt := c.lease.Doubt()
		if doubt == nil {
			return true, nil
		}
		timers.start(c.cfg.maxWait, c.stallEvery())
		select {
		case <-doubt:
		case <-c.lease.Lost():
			return false, c.lostErr()
		case <-ctx.Done():
			return false, ctx.Err()
		case <-c.done:
			return false, ErrClosed
		case <-c.topic.done:
			return false, ErrClosed
		case <-timers.maxWait.C:
			return false, nil
		}
	}
}

// pullTimers are a Pull's timers, started at its first wait: MaxWait's,
// and the stall report's (every StallReport) on a bounded topic that logs
// stalls. A timer not started is never, whose nil channel a select never
// chooses.
type pullTimers struct {
	began          time.Time
	maxWait, stall *time.Timer
}

// stallEvery is how often a waiting Pull of c checks for a stall to
// report: on a bounded topic that logs stalls, StallReport; 0 otherwise.
func (c *PullConsumer[T]) stallEvery() time.Duration {
	if t := c.topic; t.gate != nil && t.reportsStalls() {
		return t.cfg.stallAfter
	}
	return 0
}

// never is a timer that never fires: its channel is nil.
var never = &time.Timer{}

// start starts the timers a Pull needs (a zero duration: none), once.
func (pt *pullTimers) start(maxWait time.Duration, stallEvery time.Duration) {
	if pt.maxWait != nil {
		return
	}
	pt.maxWait, pt.stall = never, never
	if maxWait > 0 {
		pt.maxWait = time.NewTimer(maxWait)
	}
	if stallEvery > 0 {
		pt.began, pt.stall = time.Now(), time.NewTimer(stallEvery)
	}
}

// stop stops the timers started.
func (pt *pullTimers) stop() {
	for _, t := range []*time.Timer{pt.maxWait, pt.stall} {
		if t != nil && t != never {
			t.Stop()
		}
	}
}

// commitAndRead is the start of a Pull on storage one process owns, under
// mu: the commit of the last batch (auto commit, also when ctx has ended
// already), then one read.
func (c *PullConsumer[T]) commitAndRead(ctx context.Context) (Batch[T], bool, error) {
	if !c.cfg.manualCommit && c.batch.valid {
		if err := c.commitLocalLocked(c.batch.part, c.batch.end); err != nil {
			return Batch[T]{}, false, err
		}
	}
	if err := ctx.Err(); err != nil {
		return Batch[T]{}, false, err
	}
	return c.readLocked(ctx)
}

// usable returns ErrClosed once the consumer or the topic is closed, and
// ErrClaimLost once shared storage took the consumer's claim away.
func (c *PullConsumer[T]) usable() error {
	if c.closed.Load() || c.topic.closed.Load() {
		return ErrClosed
	}
	if !c.topic.caps.Shared {
		return nil // NoLease: never lost
	}
	select {
	case <-c.lease.Lost():
		return c.lostErr()
	default:
		return nil
	}
}

func (c *PullConsumer[T]) lostErr() error {
	return fmt.Errorf("%w: group %q of topic %q, partitions %d to %d", ErrClaimLost, c.group.name, c.topic.name, c.first, c.first+len(c.next)-1)
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
// one read last, or ok false when they are all empty. It picks the
// partition under mu and records what it delivered under it. On shared
// storage it reads without mu (a remote read may wait for a server: only
// Pull and Skip, on this goroutine, move the position meanwhile); storage
// one process owns answers from memory or a mapped file, so the read stays
// under mu and the batch pays one lock, not two.
func (c *PullConsumer[T]) read(ctx context.Context) (b Batch[T], ok bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readLocked(ctx)
}

// readLocked is read with mu held.
func (c *PullConsumer[T]) readLocked(ctx context.Context) (b Batch[T], ok bool, err error) {
	t := c.topic
	n := len(c.next)
	j, off := -1, int64(0)
	for i := 1; i <= n; i++ {
		k := (c.last + i) % n
		if t.parts[c.first+k].log.Tail() > c.next[k] {
			j, off = k, c.next[k]
			break
		}
	}
	if j < 0 {
		return b, false, nil
	}
	part := c.first + j
	var items []T
	first := off
	if t.caps.Shared {
		c.mu.Unlock()
		first, items, err = c.readShared(ctx, part, off)
		c.mu.Lock()
	} else {
		// Under mu, which Close waits for too (see Close).
		if c.closed.Load() || t.closed.Load() {
			return b, false, ErrClosed
		}
		first, items, err = t.parts[part].log.Read(c.ctx, off, c.cfg.batchSize, c.buf)
	}
	c.last = j
	c.damaged[j] = -1
	if err != nil {
		// The error is this partition's turn: the next Pull starts after
		// it, so one damaged partition never stops the others.
		if errors.Is(err, ErrClosed) || (ctx.Err() != nil && errors.Is(err, ctx.Err())) {
			return b, false, err // not the partition's: the consumer or the call ended
		}
		if errors.Is(err, ErrCorrupt) {
			// Damage past off (storage that leaves offsets unused): the
			// offsets between hold nothing, so the position moves to the
			// damaged record, which Skip steps past.
			if at, ok := CorruptOffset(err); ok && at > off {
				off, c.next[j] = at, at
			}
			c.damaged[j] = off
		}
		return b, false, &ReadError{Topic: t.name, Partition: part, Offset: off, Err: err}
	}
	if len(items) == 0 || first < off {
		// The Log contract promises at least one item below Tail, at or
		// after the offset asked for; returning instead of skipping avoids
		// spinning on it.
		return b, false, fmt.Errorf("%w: topic %q partition %d: storage returned %d items at offset %d for a read at %d below its tail",
			ErrCorrupt, t.name, part, len(items), first, off)
	}
	// The batch starts where the storage found its first item, which is
	// past off where the storage leaves offsets unused (a packed stream's
	// after each frame): the offsets between were never items, so
	// delivering from first skips nothing.
	c.next[j] = first + int64(len(items))
	c.batch.valid, c.batch.part, c.batch.end = true, part, c.next[j]
	return Batch[T]{Partition: part, Offset: first, Items: items}, true, nil
}

// readShared is one Log.Read of partition part at off on shared storage:
// under io, without mu, with a context that ends with ctx too, so a Pull
// whose ctx ends does not wait for a read stuck in an outage. (Storage one
// process owns waits for nothing but memory or a mapped file and is read
// under mu, see readLocked.)
func (c *PullConsumer[T]) readShared(ctx context.Context, part int, off int64) (int64, []T, error) {
	c.io.RLock()
	defer c.io.RUnlock()
	if c.closed.Load() || c.topic.closed.Load() { // under io: see Close
		return off, nil, ErrClosed
	}
	rctx := c.ctx
	if ctx.Done() != nil {
		var cancel context.CancelFunc
		rctx, cancel = context.WithCancel(c.ctx)
		defer context.AfterFunc(ctx, cancel)()
		defer cancel()
	}
	first, items, err := c.topic.parts[part].log.Read(rctx, off, c.cfg.batchSize, c.buf)
	switch {
	case err == nil:
	case c.ctx.Err() != nil:
		return off, nil, ErrClosed
	case ctx.Err() != nil:
		return off, nil, ctx.Err()
	}
	return first, items, err
}

// Commit commits the last pulled batch. After an empty or cancelled pull it
// commits nothing new. It is idempotent.
//
// "The last pulled batch" is the last one Pull returned: an empty or
// cancelled pull delivers nothing, so Commit then commits that same batch
// again (a no-op if it was committed) and never anything not delivered.
func (c *PullConsumer[T]) Commit() error {
	c.mu.Lock()
	if !c.topic.caps.Shared {
		defer c.mu.Unlock()
		if !c.batch.valid {
			if c.closed.Load() {
				return ErrClosed
			}
			return nil
		}
		return c.commitLocalLocked(c.batch.part, c.batch.end)
	}
	valid, part, end := c.batch.valid, c.batch.part, c.batch.end
	c.mu.Unlock()
	if !valid {
		if c.closed.Load() {
			return ErrClosed
		}
		return nil
	}
	return c.CommitTo(part, end)
}

// CommitTo records that every offset below offset in partition is done. An
// offset at or below the current commit is a no-op; one past what was
// delivered is ErrCommitBeyondDelivered; a partition not owned is
// ErrNotAssigned. It returns once storage holds the commit (durable storage
// persisted it).
func (c *PullConsumer[T]) CommitTo(partition int, offset int64) error {
	if !c.topic.caps.Shared {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.commitLocalLocked(partition, offset)
	}
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	c.mu.Lock()
	j, err := c.checkCommit(partition, offset)
	c.mu.Unlock()
	if err != nil || j < 0 {
		return err
	}
	if err := c.commitStorage(partition, offset); err != nil {
		return err
	}
	c.mu.Lock()
	c.committed[j] = max(c.committed[j], offset)
	c.mu.Unlock()
	return nil
}

// commitLocalLocked is CommitTo on storage one process owns, under mu:
// its commit waits at most for a local flush, and one lock per commit is
// what a consumer committing every batch pays (Close waits for mu too).
func (c *PullConsumer[T]) commitLocalLocked(partition int, offset int64) error {
	j, err := c.checkCommit(partition, offset)
	if err != nil || j < 0 {
		return err
	}
	if err := c.topic.commit(c.ctx, c.group, partition, offset); err != nil {
		return err
	}
	c.committed[j] = offset
	return nil
}

// checkCommit validates a commit of partition at offset under mu and
// returns the partition's index, or -1 when the commit has nothing new.
func (c *PullConsumer[T]) checkCommit(partition int, offset int64) (int, error) {
	if c.closed.Load() {
		return -1, ErrClosed // the group may have a new consumer by now
	}
	j := partition - c.first
	if j < 0 || j >= len(c.next) {
		return -1, fmt.Errorf("%w: partition %d (consumer of group %q owns %d to %d)",
			ErrNotAssigned, partition, c.group.name, c.first, c.first+len(c.next)-1)
	}
	if offset > c.next[j] {
		return -1, fmt.Errorf("%w: partition %d offset %d, delivered up to %d",
			ErrCommitBeyondDelivered, partition, offset, c.next[j])
	}
	if offset <= c.committed[j] {
		return -1, nil
	}
	return j, nil
}

// commitStorage is the topic's commit of partition at offset under io,
// refused once the consumer's claim is lost: another process may own the
// partition now.
func (c *PullConsumer[T]) commitStorage(partition int, offset int64) error {
	c.io.RLock()
	defer c.io.RUnlock()
	if err := c.usable(); err != nil { // under io: see Close
		return err
	}
	err := c.topic.commit(c.ctx, c.group, partition, offset)
	if err != nil && c.ctx.Err() != nil {
		return ErrClosed
	}
	return err
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
	if c.closed.Load() {
		c.mu.Unlock()
		return 0, ErrClosed
	}
	j := partition - c.first
	if j < 0 || j >= len(c.next) {
		c.mu.Unlock()
		return 0, fmt.Errorf("%w: partition %d (consumer of group %q owns %d to %d)",
			ErrNotAssigned, partition, c.group.name, c.first, c.first+len(c.next)-1)
	}
	off := c.damaged[j]
	if off < 0 || off != c.next[j] {
		c.mu.Unlock()
		return 0, fmt.Errorf("%w: partition %d of topic %q at offset %d", ErrNotDamaged, partition, c.topic.name, c.next[j])
	}
	c.damaged[j] = -1
	c.next[j] = off + 1
	commitNow := c.committed[j] == off
	c.mu.Unlock()
	c.skipped.Add(1)
	c.cfg.log.Warn("isb: skipped a damaged record",
		zap.String("topic", c.topic.name), zap.String("group", c.group.name), zap.Int("partition", partition), zap.Int64("offset", off))
	if commitNow {
		if err := c.CommitTo(partition, off+1); err != nil {
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
		// 1. Mark closed and wake a blocked Pull.
		c.closed.Store(true)
		close(c.done)
		// 2. End the storage calls in flight (a read or commit stuck in an
		// outage of remote storage) and wait for them: those of shared
		// storage run under io, those of storage one process owns under mu.
		c.cancel()
		c.io.Lock()
		c.io.Unlock() //nolint:staticcheck // an empty critical section is the barrier
		c.mu.Lock()
		c.mu.Unlock() //nolint:staticcheck // an empty critical section is the barrier
		// 3. Give the partitions back.
		c.closeErr = c.topic.leave(c.group, c)
	})
	return c.closeErr
}
