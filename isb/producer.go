package isb

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Producer routes items to the partitions of a topic and appends them. It is
// safe for concurrent use.
//
// A call that fails stores nothing, with two exceptions, both documented
// where they apply: a FullWait batch larger than the capacity that is
// cancelled after some of its slices were stored, and a storage error on one
// partition after others of the same batch were appended.
//
// A round-robin producer (router nil) takes the topic's round-robin
// positions, which every round-robin producer of the topic shares: the
// topic keeps them in the word its capacity is admitted with (bounded) or
// in a counter of its own (unbounded), so a single-item produce touches no
// shared word of the producer.
type Producer[T any] struct {
	topic  *Topic[T]
	router Router[T] // nil: round-robin over the topic's positions, inlined
	// seq is written by every call of a keyed producer shared by several
	// goroutines: padded so it does not share a cache line with the fields
	// above, which they all read.
	_   [40]byte
	seq atomic.Uint64 // items routed so far: the seq passed to Router.Route
	_   [56]byte
}

// admission says how a produce call treats a full topic.
type admission int

const (
	admitWait admission = iota // wait for capacity (FullWait)
	admitFail                  // ErrFull (FullFail)
	admitTry                   // report false (TryProduce*)
)

func (p *Producer[T]) mode() admission {
	if p.topic.cfg.fullMode == FullFail {
		return admitFail
	}
	return admitWait
}

// Produce appends one item. Under FullWait it waits for capacity (until ctx
// ends); under FullFail it returns ErrFull.
func (p *Producer[T]) Produce(ctx context.Context, item T) error {
	_, err := p.produce(ctx, item, p.mode())
	return err
}

// TryProduce appends item if there is capacity now and reports whether it did.
// It never waits for capacity.
func (p *Producer[T]) TryProduce(ctx context.Context, item T) (bool, error) {
	return p.produce(ctx, item, admitTry)
}

// ProduceBatch appends items, routing each one. Under FullWait a batch larger
// than the capacity is stored in capacity-sized slices, each admitted in
// turn (if ctx ends in between, the slices before stay stored); under
// FullFail the whole batch is rejected with ErrFull when it does not fit.
// A routing error rejects the whole batch before anything is stored.
func (p *Producer[T]) ProduceBatch(ctx context.Context, items []T) error {
	_, err := p.produceBatch(ctx, items, p.mode(), nil)
	return err
}

// TryProduceBatch appends all of items if there is capacity for all of them
// now and reports whether it did. It never waits for capacity; a batch
// larger than the capacity never fits.
func (p *Producer[T]) TryProduceBatch(ctx context.Context, items []T) (bool, error) {
	return p.produceBatch(ctx, items, admitTry, nil)
}

// ProduceBatchLast is ProduceBatch that also says where items went: it
// sets last[p] to the offset of the last item it stored in partition p, or
// to -1 when none went there; len(last) must be the partition count. A
// caller that records per partition what it wrote (the forwarder's writer
// publishes a watermark at that offset) routes with it, so routing has one
// implementation. On error, last holds what was stored before it.
func (p *Producer[T]) ProduceBatchLast(ctx context.Context, items []T, last []int64) error {
	_, err := p.produceBatch(ctx, items, p.mode(), last)
	return err
}

// TryProduceBatchLast is TryProduceBatch that reports where items went, as
// ProduceBatchLast does.
func (p *Producer[T]) TryProduceBatchLast(ctx context.Context, items []T, last []int64) (bool, error) {
	return p.produceBatch(ctx, items, admitTry, last)
}

func (p *Producer[T]) produce(ctx context.Context, item T, mode admission) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	t := p.topic
	rr := p.roundRobin()
	part := 0
	if !rr {
		var err error
		if part, err = p.route(item); err != nil {
			return false, err
		}
	}
	pos, ok, err := t.admit(ctx, 1, mode, rr)
	if !ok || err != nil {
		return false, err
	}
	if rr {
		part = pos
	}
	if err := t.append(part, item); err != nil {
		if errors.Is(err, ErrFull) { // storage that enforces its own limits
			one := []T{item}
			_, err = t.storageFull(ctx, mode, part, one, err)
		}
		if err != nil {
			if t.gate != nil {
				t.gate.release(1)
			}
			if mode == admitTry && errors.Is(err, ErrFull) {
				return false, nil
			}
			return false, err
		}
	}
	t.parts[part].waiters.notify()
	return true, nil
}

// roundRobin reports whether p routes round-robin over more than one
// partition: its items then take the topic's round-robin positions as they
// are admitted, and need no routing before.
func (p *Producer[T]) roundRobin() bool { return p.router == nil && p.topic.cfg.partitions > 1 }

// route picks the partition of one item with p's router.
func (p *Producer[T]) route(item T) (int, error) {
	if p.router == nil {
		return 0, nil // one partition
	}
	return p.topic.checkRoute(p.router.Route(item, p.topic.cfg.partitions, p.seq.Add(1)-1))
}

// routeBatch routes every item of items with p's router into s's table;
// round-robin batches need no table (their position comes with admission).
func (p *Producer[T]) routeBatch(items []T, s *batchScratch[T]) (routes, error) {
	if p.router == nil {
		return routes{}, nil
	}
	n := p.topic.cfg.partitions
	k := uint64(len(items))
	seq := p.seq.Add(k) - k
	idx := s.index(len(items))
	for i, it := range items {
		part, err := p.topic.checkRoute(p.router.Route(it, n, seq+uint64(i)))
		if err != nil {
			return routes{}, fmt.Errorf("isb: batch item %d: %w", i, err)
		}
		idx[i] = int32(part)
	}
	return routes{idx: idx}, nil
}

// nextRoundRobin takes k round-robin positions of an unbounded topic and
// returns the first, with a mask instead of a division when the partition
// count is a power of two (the common case of one partition per core).
func (t *Topic[T]) nextRoundRobin(k int) int {
	seq := t.rr.Add(uint64(k)) - uint64(k)
	if t.rrMask != 0 {
		return int(seq & t.rrMask)
	}
	return int(seq % uint64(len(t.parts)))
}

// checkRoute guards against a Router implementation outside this package
// returning a partition out of range.
func (t *Topic[T]) checkRoute(part int, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	if part < 0 || part >= t.cfg.partitions {
		return 0, fmt.Errorf("%w: router returned partition %d, want 0 <= p < %d", ErrInvalidKey, part, t.cfg.partitions)
	}
	return part, nil
}

func (p *Producer[T]) produceBatch(ctx context.Context, items []T, mode admission, last []int64) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	t := p.topic
	if last != nil {
		if len(last) != t.cfg.partitions {
			return false, &OptionError{Option: "ProduceBatchLast offsets", Value: len(last),
				Reason: fmt.Sprintf("must have one per partition of topic %q (%d)", t.name, t.cfg.partitions)}
		}
		for i := range last {
			last[i] = -1
		}
	}
	if t.closed.Load() {
		return false, ErrClosed
	}
	if len(items) == 0 {
		return true, nil
	}
	s := t.getScratch()
	defer t.putScratch(s)
	r, err := p.routeBatch(items, s)
	if err != nil {
		return false, err
	}
	_, ok, err := admitStore(ctx, t, int64(len(items)), mode, p.roundRobin(), routedStore[T]{ctx, mode, t, items, r, s, last})
	if mode == admitTry && err != nil && errors.Is(err, ErrFull) {
		return false, nil // storage that enforces its own limits is full
	}
	return ok, err
}

// storer stores items[start:end] of a produce call's items and returns the
// offset of the last one, or -1 when it does not track offsets; pos is the
// first round-robin position of those items when they take positions. It
// lets admitStore serve every produce call without a closure (which would
// allocate per call).
type storer interface {
	store(start, end int64, pos int) (last int64, err error)
}

// admitStore admits total items as mode says, with rr taking a round-robin
// position for each, and stores them with s: all at once when the topic is
// unbounded or they fit under the capacity, and under FullWait a batch
// larger than the capacity in capacity-sized slices, each admitted in turn
// (if ctx ends in between, the slices before stay stored). It returns the
// last offset s reported (-1 if none), and whether everything was stored;
// with mode admitTry a batch that does not fit now is (-1, false, nil).
func admitStore[T any, S storer](ctx context.Context, t *Topic[T], total int64, mode admission, rr bool, s S) (int64, bool, error) {
	if capacity := t.cfg.capacity; t.gate != nil && total > capacity {
		switch mode {
		case admitTry:
			return -1, false, nil
		case admitFail:
			return -1, false, fmt.Errorf("%w: batch of %d items exceeds the capacity %d of topic %q", ErrFull, total, capacity, t.name)
		}
		// FullWait: capacity-sized slices, each admitted in turn, so the
		// batch makes progress as consumers commit.
		last := int64(-1)
		for start := int64(0); start < total; start += capacity {
			end := min(start+capacity, total)
			pos, err := t.gate.acquire(ctx, end-start, rr)
			if err != nil {
				return last, false, err
			}
			l, err := s.store(start, end, pos)
			if err != nil {
				return last, false, err
			}
			last = l
		}
		return last, true, nil
	}
	pos, ok, err := t.admit(ctx, total, mode, rr)
	if !ok || err != nil {
		return -1, false, err
	}
	last, err := s.store(0, total, pos)
	return last, err == nil, err
}

// routedStore stores a slice of a batch routed per item.
type routedStore[T any] struct {
	ctx   context.Context
	mode  admission
	t     *Topic[T]
	items []T
	r     routes
	s     *batchScratch[T]
	last  []int64 // per partition, the offset of its last item stored; nil: not asked
}

func (b routedStore[T]) store(start, end int64, pos int) (int64, error) {
	r := routes{rr: pos}
	if b.r.idx != nil {
		r = routes{idx: b.r.idx[start:end]}
	}
	return -1, b.t.appendRouted(b.ctx, b.mode, b.items[start:end], r, b.s, b.last)
}

// admit takes n units of capacity, and with rr n round-robin positions
// whose first it returns, as mode says: the positions come with the
// capacity from the gate's word on a bounded topic, and from the topic's
// counter on an unbounded one. It reports false with a nil error only under
// admitTry. The lock-free paths (no gate, or the gate's compare-and-swap)
// come first; admitSlow handles a queue, a full gate or a closed one.
func (t *Topic[T]) admit(ctx context.Context, n int64, mode admission, rr bool) (pos int, ok bool, err error) {
	if t.gate == nil {
		if rr {
			pos = t.nextRoundRobin(int(n))
		}
		return pos, true, nil
	}
	if pos, ok := t.gate.tryFast(n, rr); ok {
		return pos, true, nil // a gate closed meanwhile fails the append instead
	}
	return t.admitSlow(ctx, n, mode, rr)
}

// admitSlow is admit when the fast path failed: someone is queued, the
// items do not fit, or the gate closed.
func (t *Topic[T]) admitSlow(ctx context.Context, n int64, mode admission, rr bool) (pos int, ok bool, err error) {
	switch mode {
	case admitWait:
		if pos, err = t.gate.acquire(ctx, n, rr); err != nil {
			return 0, false, err
		}
		return pos, true, nil
	case admitFail:
		pos, ok, err = t.gate.tryAcquire(n, rr)
		if err == nil && !ok {
			err = ErrFull // a sentinel: no allocation on the hot path
		}
		return pos, ok, err
	default:
		return t.gate.tryAcquire(n, rr)
	}
}

// append stores one item in partition part and waits for its write. The
// concurrent log's path is written out here rather than shared with
// appendItems: it is the single-item produce's whole cost (one call less
// is 10% of it on memory storage).
func (t *Topic[T]) append(part int, item T) error {
	pt := t.parts[part]
	var w Write
	var err error
	if pt.concurrent {
		// Checked before, not under, the log's lock: an append that passes
		// it as Close begins completes before Close's Seal returns.
		if t.closed.Load() {
			return ErrClosed
		}
		w, err = pt.log.AppendOne(item)
	} else {
		pt.mu.Lock()
		if t.closed.Load() { // under the lock: see Close
			pt.mu.Unlock()
			return ErrClosed
		}
		w, err = pt.log.AppendOne(item)
		pt.mu.Unlock()
	}
	if err != nil {
		return t.appendErr(part, err)
	}
	if w.Pending() {
		_, err = t.complete(part, w)
	}
	return err
}

// appendItems appends items to partition part and returns the write,
// under the partition's lock unless its log serializes its own appends.
func (t *Topic[T]) appendItems(part int, items []T) (Write, error) {
	pt := t.parts[part]
	if pt.concurrent {
		if t.closed.Load() { // see appendOne
			return Write{}, ErrClosed
		}
		w, err := pt.log.Append(items)
		if err != nil {
			return Write{}, t.appendErr(part, err)
		}
		return w, nil
	}
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if t.closed.Load() { // under the lock: see Close
		return Write{}, ErrClosed
	}
	w, err := pt.log.Append(items)
	if err != nil {
		return Write{}, t.appendErr(part, err)
	}
	return w, nil
}

// appendWait appends items to partition part, waits for the write and
// returns the offset of the last item.
func (t *Topic[T]) appendWait(part int, items []T) (int64, error) {
	w, err := t.appendItems(part, items)
	if err != nil {
		return -1, err
	}
	return t.complete(part, w)
}

// complete waits for w, a write to partition part, and returns the offset
// of its last item. A deferred write is waited under the partition's
// publishMu, which Close waits for before it closes storage; once the
// topic is closed a write not completed yet is ErrClosed (its items never
// become visible here).
func (t *Topic[T]) complete(part int, w Write) (int64, error) {
	if !w.Pending() {
		return w.last, nil
	}
	pt := t.parts[part]
	pt.publishMu.RLock()
	defer pt.publishMu.RUnlock()
	if t.closed.Load() { // under publishMu: see Close
		return -1, ErrClosed
	}
	last, err := w.Wait(t.ctx)
	if err != nil {
		if t.ctx.Err() != nil {
			return -1, ErrClosed
		}
		return -1, t.appendErr(part, err)
	}
	return last, nil
}

// appendErr wraps a storage error of an append; once the topic is closed
// (a sealed log fails its appends) it is plain ErrClosed, as a producer
// that finds the topic closed under the partition lock reports it.
func (t *Topic[T]) appendErr(part int, err error) error {
	if t.closed.Load() {
		return ErrClosed
	}
	return fmt.Errorf("isb: topic %q partition %d: append: %w", t.name, part, err)
}

// appendRouted appends items as r routes them, keeping the batch's order
// within each partition, and wakes the readers of each partition it
// appended to. Capacity acquired for items that a storage error kept from
// being stored is released.
func (t *Topic[T]) appendRouted(ctx context.Context, mode admission, items []T, r routes, s *batchScratch[T], last []int64) error {
	n := len(t.parts)
	if n == 1 {
		l, err := t.appendRun(ctx, mode, 0, items, int64(len(items)))
		if last != nil && err == nil {
			last[0] = l
		}
		return err
	}
	out, starts := s.group(items, r, n)
	defer clear(s.out[:len(items)]) // do not keep the items alive in the pool
	for part := range n {
		run := out[starts[part]:starts[part+1]]
		if len(run) == 0 {
			continue
		}
		l, err := t.appendRun(ctx, mode, part, run, int64(len(items)-starts[part]))
		if err != nil {
			return err
		}
		if last != nil {
			last[part] = l
		}
	}
	return nil
}

// appendRun appends run to partition part, wakes that partition's readers
// and returns the offset of its last item. Storage that reports itself full
// is handled as mode says (see storageFull). On error it releases rest units
// of capacity: those of run and of whatever the caller had admitted along
// with it and will not store.
func (t *Topic[T]) appendRun(ctx context.Context, mode admission, part int, run []T, rest int64) (int64, error) {
	last, err := t.appendWait(part, run)
	if err != nil && errors.Is(err, ErrFull) { // storage that enforces its own limits
		last, err = t.storageFull(ctx, mode, part, run, err)
	}
	if err != nil {
		if t.gate != nil {
			t.gate.release(rest)
		}
		return -1, err
	}
	t.parts[part].waiters.notify()
	return last, nil
}

// storageFull handles an append of items to partition part that storage
// refused with err, matching ErrFull: storage that enforces its own limits
// (Caps.OwnsLimits). FullFail and TryProduce give up with err (the caller
// reports ErrFull or false); FullWait retries whenever storage changes (a
// commit anywhere may make room), polling as well in case the storage
// reports no changes, until the append succeeds, ctx ends or the topic
// closes. It returns the offset of the last item stored.
func (t *Topic[T]) storageFull(ctx context.Context, mode admission, part int, items []T, err error) (int64, error) {
	if mode != admitWait {
		return -1, err
	}
	poll := time.NewTimer(storagePoll)
	defer poll.Stop()
	began, reported := time.Now(), time.Duration(0)
	for {
		room := t.room.next() // before the retry: a change after it is not lost
		last, err := t.appendWait(part, items)
		if err == nil || !errors.Is(err, ErrFull) {
			return last, err
		}
		if waited := time.Since(began); waited-reported >= t.cfg.stallAfter && t.reportsStalls() {
			t.reportStorageFull(part, waited, err)
			reported = waited
		}
		select {
		case <-room:
		case <-poll.C:
			poll.Reset(storagePoll)
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-t.done:
			return -1, ErrClosed
		}
	}
}

// storagePoll is how often a producer waiting for room in storage that
// enforces its own limits retries without a storage change.
const storagePoll = 50 * time.Millisecond
