package forwarder

import (
	"context"
	"errors"
	"iter"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/tracker"
	"github.com/runnel-dev/runnel/vertex"
)

// inflight is one message read and not yet acked. The envelope is copied
// out of the isb batch (which may alias storage only until the next Pull or
// Commit), so an inflight lives as long as its processing needs.
type inflight[T any] struct {
	msg       vertex.Message[T]
	partition int
	offset    int64
	owner     *batchBuf[T] // the pooled batch it lives in; nil when not pooled
}

// batchBuf holds one read batch. Its chunks are acked independently; the
// last ack puts it back in the reader's pool, so that steady reading does
// not allocate (and the garbage collector has less to do).
type batchBuf[T any] struct {
	items []inflight[T]
	left  atomic.Int64 // items not yet acked or nacked
	read  time.Time    // when the batch was read: each chunk's ack observes the time since
}

// reader pulls a replica's partitions under the in-flight semaphore, tracks
// what it hands on, and commits what is acked.
type reader[T any] struct {
	c         *isb.PullConsumer[vertex.Message[T]]
	tr        *tracker.Tracker[struct{}]
	sem       *semaphore.Weighted
	batch     int
	max       int
	counters  *Counters
	fetch     WatermarkFetcher
	endFetch  EndFetcher   // fetch, when it learns of ended partitions
	ends      *InputEnds   // owned by the reader goroutine; nil: the input never ends
	run       string       // the run whose ends count (Config.Run; "": any)
	headWM    atomic.Int64 // newest watermark read, unix ns (0: none)
	delivered []atomic.Int64
	pool      sync.Pool // of *batchBuf[T]
	// cmu serializes commits (the reader goroutine's before each wait, an
	// acker's for a drained partition) and guards committed.
	cmu       sync.Mutex
	committed []int64
	// failed ends the reader's waits when an acker's commit failed; err
	// is that failure (guarded by mu).
	failed context.CancelFunc
	err    error

	mu       sync.Mutex // guards the fields below and err
	dirty    []bool     // partitions with acks not yet committed
	anyDirty bool

	// endsState is the ends learned outside the buffer (reader_ends.go);
	// its found and Pull wake are guarded by mu.
	endsState endsState

	// anchors, when not nil, is told of each batch before it is handed on
	// and runs after each commit (map_resume.go).
	anchors *mapAnchors
}

// newReader returns the reader of c, whose buffer has partitions; with
// writers > 0, it ends once every partition it reads has had an
// end-of-stream message from that many processors (see InputEnds).
func newReader[T any](c *isb.PullConsumer[vertex.Message[T]], partitions, writers, batch, maxInFlight int, counters *Counters, fetch WatermarkFetcher) *reader[T] {
	r := &reader[T]{
		c: c, tr: tracker.New[struct{}](partitions), sem: semaphore.NewWeighted(int64(maxInFlight)),
		batch: batch, max: maxInFlight, counters: counters, fetch: fetch,
		delivered: make([]atomic.Int64, partitions), committed: make([]int64, partitions),
		dirty: make([]bool, partitions),
	}
	r.endFetch, _ = fetch.(EndFetcher)
	if writers > 0 {
		r.ends = NewInputEnds(c.Assigned(), writers)
	}
	for i := range r.committed {
		r.committed[i] = -1 // unknown: the first commit of a partition is always sent
	}
	return r
}

// loop reads until its input ended (an end-of-stream message from every
// writer of every partition it reads), stop ends, the consumer is closed or
// dispatch refuses a batch (the pipeline is failing), handing each batch to
// dispatch, which owns the batch's permits from then on.
//
// Its waits (for permits, for items) are never interrupted to commit: acks
// of a partition that leaves nothing in flight commit at once from the
// acking goroutine (a commit does not wait for a blocked Pull), and the
// other acks are committed here before the next wait.
func (r *reader[T]) loop(stop context.Context, dispatch func([]inflight[T]) bool) error {
	ctx, failed := context.WithCancel(stop)
	defer failed()
	r.mu.Lock()
	r.failed = failed
	r.mu.Unlock()
	held := 0
	defer func() { r.release(held) }()
	if r.ended() {
		return nil // every input ended before this reader started (seedEnds)
	}
	for {
		if err := r.commitDirty(); err != nil {
			return err
		}
		if held == 0 {
			if err := r.sem.Acquire(ctx, int64(r.batch)); err != nil {
				return r.stopped(stop, err)
			}
			held = r.batch
			continue // commit the acks that freed the permits before waiting again
		}
		pull, ok := r.pullContext(ctx)
		if !ok {
			r.recordFound()
			if r.ended() {
				return nil
			}
			continue
		}
		b, err := r.c.Pull(pull)
		if err != nil {
			if ctx.Err() == nil && pull.Err() != nil {
				continue // woken by endsLoop: record what it found
			}
			return r.stopped(stop, err)
		}
		items := r.take(b)
		r.release(held - len(items))
		held = 0
		if len(items) > 0 && !dispatch(items) {
			return nil
		}
		if r.ended() {
			return nil
		}
	}
}

// stopped is what loop returns when a wait failed with err: the failure of
// an acker's commit, nothing when stop ended or the consumer closed, err
// otherwise.
func (r *reader[T]) stopped(stop context.Context, err error) error {
	r.mu.Lock()
	ackErr := r.err
	r.mu.Unlock()
	switch {
	case ackErr != nil:
		return ackErr
	case stop.Err() != nil || errors.Is(err, isb.ErrClosed):
		return nil
	}
	return err
}

// ended reports whether every partition the reader reads has ended.
func (r *reader[T]) ended() bool { return r.ends != nil && r.ends.Done() }

// take copies batch b out of the isb, fetches watermarks and tracks every
// offset before anything processes it. Control messages are skipped (an
// end of stream is noted first): they are never tracked, so the next commit
// passes them.
func (r *reader[T]) take(b isb.Batch[vertex.Message[T]]) []inflight[T] {
	buf, _ := r.pool.Get().(*batchBuf[T])
	if buf == nil || cap(buf.items) < len(b.Items) {
		buf = &batchBuf[T]{items: make([]inflight[T], 0, max(len(b.Items), r.batch))}
	}
	items := buf.items[:0]
	buf.read = time.Now() // one clock read per batch, for the processing time
	// One fetch per batch, at its first data message: the watermark of a
	// later offset can only be the same or higher, so every message of the
	// batch gets a watermark at most its own (conservative, and still never
	// decreasing), for one fetcher call instead of one per message.
	var wm time.Time
	fetched := r.fetch == nil
	for i := range b.Items {
		m := &b.Items[i]
		off := b.Offset + int64(i)
		if len(m.Tags) > 0 && m.HasTag(ControlTag) {
			if r.ends != nil {
				r.noteEnd(b.Partition, m)
			}
			continue
		}
		if !fetched {
			wm, fetched = r.fetch.Fetch(b.Partition, off), true
		}
		it := inflight[T]{msg: *m, partition: b.Partition, offset: off, owner: buf}
		if r.fetch != nil {
			it.msg.Watermark = wm
		}
		items = append(items, it)
	}
	// One tracker call for the batch: its data messages share a partition
	// and, with a fetcher, a watermark. Without one each message carries
	// its writer's, and the batch's lowest is tracked for all of them
	// (lower than some: the in-flight watermark stays conservative).
	// Offsets come from one consumer, strictly increasing: none is
	// tracked already.
	if len(items) > 0 {
		low := wm
		if r.fetch == nil {
			low = items[0].msg.Watermark
			for i := range items {
				if w := items[i].msg.Watermark; w.Before(low) {
					low = w
				}
			}
		}
		_ = r.tr.InsertBatch(b.Partition, offsetsOf(items), low, struct{}{})
	}
	buf.items = items
	buf.left.Store(int64(len(items)))
	if r.anchors != nil && len(items) > 0 {
		r.anchors.register(b.Partition, b.End())
	}
	r.raiseHead(wm)
	// Stored after the inserts, so a commit that finds nothing in flight
	// and commits up to delivered never passes an untracked offset.
	r.delivered[b.Partition].Store(b.End())
	r.counters.read.Add(int64(len(items))) // control messages are not data
	r.counters.enter(len(items))
	if skipped := len(b.Items) - len(items); skipped > 0 {
		r.markDirty(b.Partition) // the reader commits before it waits
	}
	return items
}

// offsetsOf ranges over the offsets of items.
func offsetsOf[T any](items []inflight[T]) iter.Seq[int64] {
	return func(yield func(int64) bool) {
		for i := range items {
			if !yield(items[i].offset) {
				return
			}
		}
	}
}

// noteEnd records m when it is an end-of-stream message; when it ends its
// partition Final, the partition's watermark is watermark.Max from now on.
func (r *reader[T]) noteEnd(partition int, m *vertex.Message[T]) {
	proc, kind, ok := EndOf(m)
	if ok {
		r.observeEnd(partition, proc, kind)
	}
}

// observeEnd records the end of processor's stream on partition, unless it
// is a stale one of another run.
func (r *reader[T]) observeEnd(partition int, proc string, kind EndKind) {
	if !ofRun(proc, r.run) {
		return
	}
	if ended, k := r.ends.Observe(partition, proc, kind); ended && k == Final && r.endFetch != nil {
		r.raiseHead(r.endFetch.EndPartition(partition))
	}
}

// markDirty records that partition has acks to commit.
func (r *reader[T]) markDirty(partition int) {
	r.mu.Lock()
	r.dirty[partition] = true
	r.anyDirty = true
	r.mu.Unlock()
}

// commitDirty commits every marked partition up to its lowest in-flight
// offset, or up to what was delivered when nothing of it is in flight.
func (r *reader[T]) commitDirty() error {
	r.mu.Lock()
	if !r.anyDirty {
		r.mu.Unlock()
		return nil
	}
	parts := make([]int, 0, 4)
	for p, d := range r.dirty {
		if d {
			parts = append(parts, p)
			r.dirty[p] = false
		}
	}
	r.anyDirty = false
	r.mu.Unlock()
	r.cmu.Lock()
	defer r.cmu.Unlock()
	for _, p := range parts {
		target := r.delivered[p].Load()
		if lo, ok := r.tr.LowestOffset(p); ok {
			target = lo
		}
		if target <= r.committed[p] {
			continue
		}
		if err := r.c.CommitTo(p, target); err != nil {
			return err
		}
		r.committed[p] = target
	}
	if r.anchors != nil {
		return r.anchors.committed()
	}
	return nil
}

// ack finishes items: untracks them, marks their partitions for commit and
// gives their permits back (in that order, so a reader woken by the permits
// sees the marks).
//
// The reader commits marked partitions before each wait. An ack that
// leaves its partition with nothing in flight commits at once, from the
// acking goroutine: a drained partition must be committed now, or an
// upstream waiting for capacity could wait for a reader that waits for it.
// Before that, the commit could not pass the oldest message still in
// flight anyway. A failed commit ends the reader (see loop).
func (r *reader[T]) ack(items []inflight[T]) {
	if len(items) == 0 {
		return
	}
	// A chunk comes from one batch: one partition.
	p := items[0].partition
	r.tr.DeleteBatch(p, offsetsOf(items))
	// Marked after the deletes: a commit must find the whole chunk gone.
	_, busy := r.tr.LowestOffset(p)
	r.markDirty(p)
	if !busy {
		if err := r.commitDirty(); err != nil {
			r.fail(err)
		}
	}
	n := len(items)
	r.counters.acked.Add(int64(n))
	r.counters.inFlight.Add(-int64(n))
	if b := items[0].owner; b != nil {
		r.counters.latency.Since(b.read) // per chunk: a chunk comes from one batch
	}
	r.recycle(items)
	r.release(n)
}

// fail records the first failure of an acker's commit and ends the
// reader's wait, so that loop returns it.
func (r *reader[T]) fail(err error) {
	if errors.Is(err, isb.ErrClosed) {
		return // the consumer closed: loop's Pull returns too, and that is no failure
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
	if r.failed != nil {
		r.failed()
	}
}

// recycle puts the batch of items back in the pool once every item of it
// is acked or nacked. items must not be used afterwards.
func (r *reader[T]) recycle(items []inflight[T]) {
	b := items[0].owner
	if b == nil || b.left.Add(-int64(len(items))) != 0 {
		return
	}
	clear(b.items) // drop the references to the messages' values
	b.items = b.items[:0]
	r.pool.Put(b)
}

// nack gives up on items without acking them: they stay tracked, so the
// partition's commit stays below them and they are read again after a
// restart (durable storage).
func (r *reader[T]) nack(items []inflight[T]) {
	if len(items) == 0 {
		return
	}
	r.counters.inFlight.Add(-int64(len(items)))
	r.recycle(items)
	r.release(len(items))
}

func (r *reader[T]) release(n int) {
	if n > 0 {
		r.sem.Release(int64(n))
	}
}

// drain waits until every permit is back (every message acked or nacked),
// then commits what was acked.
func (r *reader[T]) drain() error {
	_ = r.sem.Acquire(context.Background(), int64(r.max))
	defer r.sem.Release(int64(r.max))
	return r.commitDirty()
}
