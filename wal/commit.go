package wal

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"
)

// request is one Append or GC on its way to the committer: entries encoded
// (but not sealed) by the appender's goroutine, so that encoding runs in
// parallel and the committer only seals, writes and syncs.
type request struct {
	buf     []byte
	ends    []int // end of each entry in buf
	offsets []partitionOffset
	gc      *gcEvent
	pending *Pending // answered by the committer, which then pools the request
}

type partitionOffset struct {
	partition int32
	offset    int64
}

// testHookGather, when set by a test, runs in the committer between taking
// a request and gathering the waiting ones.
var testHookGather func(*WAL)

var requestPool = sync.Pool{New: func() any { return &request{} }}

func getRequest() *request {
	r := requestPool.Get().(*request)
	r.buf, r.ends, r.offsets, r.gc, r.pending = r.buf[:0], r.ends[:0], r.offsets[:0], nil, nil
	return r
}

// answer reports the request's result to its Pending and gives the request
// back to the pool: only the committer calls it, and the appender no
// longer touches a request it handed over.
func (r *request) answer(err error) {
	p := r.pending
	p.err = err
	close(p.done)
	r.buf, r.gc, r.pending = r.buf[:0], nil, nil
	requestPool.Put(r)
}

// Pending is an AppendAsync on its way to disk. Its methods are safe for
// concurrent use, and it may be waited for any number of times.
type Pending struct {
	w    *WAL
	done chan struct{} // closed by the committer once err is set
	err  error
}

// Done is closed once the append's batch is written and fsync'd, or
// failed: Wait then returns at once.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Wait returns once the append is durable (nil) or failed: the write error
// that stopped the WAL, ErrClosed when Close came first. If ctx ends first,
// Wait returns ctx.Err() and the append may still complete.
func (p *Pending) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	select {
	case <-p.done:
		return p.err
	case <-p.w.done:
		// The committer exited; it answers every request it took before
		// that, so an unanswered one stayed in the queue, unwritten.
		select {
		case <-p.done:
			return p.err
		default:
			return p.w.stoppedErr()
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Append writes entries to the log and returns once they are durable: the
// group commit writes the entries of concurrent Appends and GCs as one
// tidwall/wal write batch and fsyncs once for all of them. Acknowledge the
// messages to the ISB only after Append returned nil.
//
// The entries of one Append are consecutive in the log. If ctx ends first,
// Append returns ctx.Err() and the entries may or may not be written. Each
// entry needs at least one window; times must lie in the years 1678-2261.
func (w *WAL) Append(ctx context.Context, entries ...Entry) error {
	p, err := w.AppendAsync(ctx, entries...)
	if err != nil {
		return err
	}
	return p.Wait(ctx)
}

// AppendAsync is Append without the wait: it encodes entries, hands them
// to the group commit and returns; the returned Pending's Wait returns
// once they are durable. It lets a caller go on reading (and appending)
// while a batch is fsync'd: the group commit then shares one fsync among
// the batches that queued meanwhile. Acknowledge the messages only after
// Wait returned nil.
//
// Appends from one goroutine are written in the order they were made, and
// so are their results: once a Pending is done, every append made before it
// by the same goroutine is done too. AppendAsync blocks only while the
// committer's queue is full; an error (an invalid entry, ErrClosed, the
// error that stopped the WAL, ctx.Err()) means nothing was handed over.
func (w *WAL) AppendAsync(ctx context.Context, entries ...Entry) (*Pending, error) {
	r := getRequest()
	for i := range entries {
		e := &entries[i]
		if err := e.validate(); err != nil {
			requestPool.Put(r)
			return nil, err
		}
		r.buf = appendMessage(r.buf, e)
		r.ends = append(r.ends, len(r.buf))
		r.notePartition(e.Partition, e.Offset)
	}
	if len(r.ends) == 0 {
		requestPool.Put(r)
		return donePending, nil
	}
	return w.submit(ctx, r)
}

// donePending is the Pending of an append of nothing.
var donePending = func() *Pending {
	p := &Pending{done: make(chan struct{})}
	close(p.done)
	return p
}()

// GC appends a GC event for windows the reduce closed (and emitted) at
// watermark, and returns once it is durable. Their entries are dropped by
// the next compaction; Replay skips them already. A session window is
// named by its Session id alone; after a session merge, close every id
// the merged session's entries were appended under. Entries must not be
// appended to a window after its GC event.
func (w *WAL) GC(ctx context.Context, watermark time.Time, windows ...Window) error {
	p, err := w.GCAsync(ctx, watermark, windows...)
	if err != nil {
		return err
	}
	return p.Wait(ctx)
}

// GCAsync is GC without the wait, as AppendAsync is Append: a caller with
// several logs (a reduce replica with one per partition) closes windows in
// all of them under one fsync's latency. A GC of no windows writes nothing.
func (w *WAL) GCAsync(ctx context.Context, watermark time.Time, windows ...Window) (*Pending, error) {
	if len(windows) == 0 {
		return donePending, nil
	}
	if err := checkTime("watermark", watermark); err != nil {
		return nil, err
	}
	if err := checkWindows(windows); err != nil {
		return nil, err
	}
	r := getRequest()
	// A copy: the committer reads the windows after the caller may have
	// reused its slice (once Wait returned ctx.Err(), say).
	r.gc = &gcEvent{watermark: watermark, windows: slices.Clone(windows)}
	r.buf = appendGC(r.buf, r.gc)
	r.ends = append(r.ends, len(r.buf))
	return w.submit(ctx, r)
}

// notePartition keeps the highest offset per partition of the request (a
// batch usually holds one or a few partitions).
func (r *request) notePartition(p int32, off int64) {
	for i := range r.offsets {
		if r.offsets[i].partition == p {
			r.offsets[i].offset = max(r.offsets[i].offset, off)
			return
		}
	}
	r.offsets = append(r.offsets, partitionOffset{p, off})
}

// submit hands r to the committer and returns the Pending it answers.
func (w *WAL) submit(ctx context.Context, r *request) (*Pending, error) {
	p := &Pending{w: w, done: make(chan struct{})}
	r.pending = p
	select {
	case w.reqs <- r:
		return p, nil
	case <-w.stop:
		requestPool.Put(r)
		return nil, ErrClosed
	case <-w.done:
		requestPool.Put(r)
		return nil, w.stoppedErr()
	case <-ctx.Done():
		requestPool.Put(r)
		return nil, ctx.Err()
	}
}

func (w *WAL) stoppedErr() error {
	if err := w.Err(); err != nil {
		return err
	}
	return ErrClosed
}

// run is the committer goroutine, owned by the WAL: started by Open,
// stopped by Close (w.stop). It writes batches, starts compactions (each in
// a goroutine of its own, see compaction) and switches generations when
// one is built, and stops for good on a write error, which Err reports.
// When it exits it abandons a running compaction, sends the error that
// stopped it (nil for Close) on w.errc, which Close receives, and closes
// w.done, on which appenders wait.
func (w *WAL) run() {
	var queued []chan error // Compact calls that came while a compaction ran
	defer func() {
		if c := w.running; c != nil {
			w.running = nil
			w.abandon(c, w.stoppedErr())
		}
		for _, ch := range queued {
			ch <- w.stoppedErr()
		}
		w.errc <- w.Err()
		close(w.done)
	}()
	var tick <-chan time.Time
	if w.cfg.compactEvery > 0 {
		t := time.NewTicker(w.cfg.compactEvery)
		defer t.Stop()
		tick = t.C
	}
	var group []*request
	for {
		var built <-chan error // the running compaction's result
		if w.running != nil {
			built = w.running.errc
		}
		select {
		case <-w.stop:
			return
		case r := <-w.reqs:
			w.appended.Store(true)
			if testHookGather != nil {
				testHookGather(w)
			}
			group = w.gather(append(group[:0], r))
			err := w.commit(group)
			if err != nil {
				w.fail(err) // before the answers: an appender told of it sees it in Err
			}
			for _, r := range group {
				r.answer(err)
			}
			clear(group)
			if err != nil {
				return
			}
			if w.running == nil && len(w.closed) > 0 && w.genBytes > max(2*w.keptSize, w.cfg.compactMin) {
				w.running = w.startCompaction(false, nil)
			}
		case <-tick:
			if w.running == nil && len(w.closed) > 0 && w.appended.Load() {
				w.running = w.startCompaction(false, nil)
			}
		case ch := <-w.compacts:
			if w.running != nil {
				queued = append(queued, ch) // after it: windows closed since its snapshot go too
				continue
			}
			w.running = w.startCompaction(true, []chan error{ch})
		case err := <-built:
			c := w.running
			w.running = nil
			<-c.done
			if w.finishCompaction(c, err) != nil && w.Err() != nil {
				return
			}
			if len(queued) > 0 {
				w.running = w.startCompaction(true, queued)
				queued = nil
			}
		}
	}
}

// gather adds the requests already waiting to group, up to MaxBatchBytes.
func (w *WAL) gather(group []*request) []*request {
	size := len(group[0].buf)
	for size < w.cfg.maxBatch {
		select {
		case r := <-w.reqs:
			group = append(group, r)
			size += len(r.buf)
		default:
			return group
		}
	}
	return group
}

// commit writes the group as one batch with one fsync, then applies it to
// the log state: only durable entries count.
func (w *WAL) commit(group []*request) error {
	w.batchID++
	index, lastReq := w.last, len(group)-1
	var bytes int64
	cycled := w.beginBatch()
	for ri, r := range group {
		start := 0
		for ei, end := range r.ends {
			e := r.buf[start:end]
			start = end
			var flags byte
			if ri == lastReq && ei == len(r.ends)-1 {
				flags = flagBatchEnd
			}
			seal(e, w.batchID, flags)
			index++
			w.batch.Write(index, e)
			if w.running != nil {
				w.running.noteCommitted(e)
			}
			frame := frameSize(e)
			bytes += frame
			if w.addFrame(frame) {
				cycled = true
			}
		}
	}
	n := index - w.last
	var start time.Time
	if w.cfg.onCommit != nil {
		start = time.Now()
	}
	if err := w.log.WriteBatch(&w.batch); err != nil {
		w.batch.Clear()
		return fmt.Errorf("wal: write batch: %w", err)
	}
	if cycled {
		// tidwall/wal fsyncs segment data but not the directory: make the
		// new segment's name durable, and record it as the newest.
		if err := w.recordRollover(); err != nil {
			return err
		}
	}
	if w.cfg.onCommit != nil {
		w.cfg.onCommit(time.Since(start))
	}
	w.last = index
	w.genBytes += bytes
	for _, r := range group {
		for _, po := range r.offsets {
			w.cp.note(po.partition, po.offset)
		}
		if r.gc != nil {
			w.closeWindows(r.gc)
		}
	}
	w.stats.batches.Add(1)
	w.stats.entries.Add(int64(n))
	w.stats.logBytes.Store(w.genBytes)
	return nil
}

// beginBatch and addFrame mirror tidwall/wal's segment rollover in w.tail:
// it starts a new segment before a batch if the last one is past
// SegmentSize, and after any entry that brings it to SegmentSize. Each
// reports whether it started one.
func (w *WAL) beginBatch() bool {
	if w.tail > int64(w.cfg.segmentSize) {
		w.tail = 0
		return true
	}
	return false
}

func (w *WAL) addFrame(frame int64) bool {
	if w.tail += frame; w.tail >= int64(w.cfg.segmentSize) {
		w.tail = 0
		return true
	}
	return false
}

// frameSize is the bytes tidwall/wal writes for entry e: a uvarint length
// and e.
func frameSize(e []byte) int64 { return int64(uvarintLen(len(e)) + len(e)) }

// recordRollover fsyncs the generation directory and writes the tail hint
// naming its newest segment.
func (w *WAL) recordRollover() error {
	segs, _, err := listSegments(w.genDir())
	if err != nil {
		return err
	}
	if err := writeHint(w.genDir(), segs[len(segs)-1].first); err != nil {
		return err
	}
	w.stats.segments.Store(int64(len(segs)))
	return nil
}

func (w *WAL) fail(err error) {
	w.failMu.Lock()
	w.failErr = err
	w.failMu.Unlock()
}

func uvarintLen(n int) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], uint64(n))
}
