package forwarder

import (
	"context"
	"fmt"

	"github.com/runnel-dev/runnel/vertex"
)

// AppendFunc is the allocation-free form of a map function that RunMap
// takes: it appends the outputs of m to outs and returns the extended
// slice. On error what it appended is discarded.
type AppendFunc[In, Out any] func(ctx context.Context, m vertex.Message[In], outs []vertex.Message[Out]) ([]vertex.Message[Out], error)

// FromMapFunc adapts a vertex.MapFunc.
func FromMapFunc[In, Out any](fn vertex.MapFunc[In, Out]) AppendFunc[In, Out] {
	return func(ctx context.Context, m vertex.Message[In], outs []vertex.Message[Out]) ([]vertex.Message[Out], error) {
		res, err := fn(ctx, m)
		return append(outs, res...), err
	}
}

// FromValueFunc adapts a function of values: its output keeps the input's
// metadata ([vertex.Derive]).
func FromValueFunc[In, Out any](fn func(context.Context, In) (Out, error)) AppendFunc[In, Out] {
	return func(ctx context.Context, m vertex.Message[In], outs []vertex.Message[Out]) ([]vertex.Message[Out], error) {
		v, err := fn(ctx, m.Value)
		if err != nil {
			return outs, err
		}
		return append(outs, vertex.Derive(m, v)), nil
	}
}

// RunMap runs one replica of a map vertex: fn is called for every input
// (concurrently up to Options.Concurrency, in order per key with
// Options.OrderByKey) and a chunk's inputs are acked once all their outputs
// are written to edges. See replica.run for hard and stop.
func RunMap[In, Out any](hard, stop context.Context, cfg Config, in Input[In], edges []Edge[Out], fn AppendFunc[In, Out]) error {
	return RunResumedMap(hard, stop, cfg, in, edges, fn, nil)
}

// RunResumedMap is RunMap on durable storage for a map that writes nothing
// twice (see MapResume): every output carries its origin, the outputs res
// found an earlier run wrote are not written again, and the replica holds
// what it writes until its input's commit is durable. A nil res is RunMap.
func RunResumedMap[In, Out any](hard, stop context.Context, cfg Config, in Input[In], edges []Edge[Out], fn AppendFunc[In, Out], res *MapResume) error {
	cfg = cfg.withFailures()
	rp := newReplica(hard, stop, cfg, in)
	if res != nil {
		a, err := newMapAnchors(res, cfg.Replica)
		if err != nil {
			return asProcessError(cfg, err)
		}
		rp.r.anchors = a // told of every read batch and every commit
	}
	w := NewWriter(edges, cfg.Counters, cfg.Hooks.Publisher, rp.r.watermark).reportingTo(cfg)
	rp.stage = stage[In]{mode: modeOf(cfg), out: w, stages: w.Stages()}
	if rp.stage.stages {
		// Durable storage that stages writes: a worker maps its next
		// chunks while the outputs of the last ones are flushed.
		rp.stage.chunks = stagedChunks(cfg.Options)
	}
	for range rp.workers() {
		mw := &mapWorker[In, Out]{cfg: cfg, fn: fn, w: w, res: res}
		if res != nil {
			mw.st = &mapStamps{vertex: res.Vertex}
		}
		h := mw.write
		if rp.stage.stages {
			mw.free = make(chan *stagedOutputs[Out], stagedWrites)
			for range stagedWrites {
				mw.free <- &stagedOutputs[Out]{w: w, free: mw.free}
			}
			h = mw.stage
		}
		rp.stage.handlers = append(rp.stage.handlers, h)
	}
	return rp.run()
}

// mapWorker is one worker of a map replica. Its handler maps a chunk
// (apply) and then writes the outputs: at once (write), or staged for the
// completer (stage).
type mapWorker[In, Out any] struct {
	cfg  Config
	fn   AppendFunc[In, Out]
	w    *Writer[Out]
	outs []vertex.Message[Out] // apply's outputs, reused
	buf  WriteBuffer[Out]      // write's
	// free holds stage's buffers not in flight; the completer returns
	// them (stagedOutputs.complete).
	free chan *stagedOutputs[Out]
	// With a MapResume (nil otherwise): st gives the outputs their
	// origins, and res says which an earlier run wrote already.
	res *MapResume
	st  *mapStamps
}

// apply maps chunk into m.outs; with a MapResume each output gets its
// origin (what the runtime adds to the outputs before they are written).
func (m *mapWorker[In, Out]) apply(ctx context.Context, chunk []inflight[In]) error {
	var err error
	m.outs, err = mapChunk(ctx, m.cfg, m.fn, chunk, m.outs[:0], m.st)
	return err
}

// write is the handler of a replica whose writes are not staged: the
// chunk's outputs are written when it returns.
func (m *mapWorker[In, Out]) write(ctx context.Context, chunk []inflight[In]) (completion, error) {
	if err := m.apply(ctx, chunk); err != nil {
		return nil, err
	}
	m.buf.skip = skipFound[In, Out](m.res, chunk) // what an earlier run wrote
	err := m.w.Write(ctx, m.outs, &m.buf)
	m.buf.skip = nil
	clear(m.outs)
	return nil, err
}

// stage is the handler of a replica whose writes are staged: it returns
// the chunk's staged outputs, one of the worker's stagedWrites buffers
// (it waits for the completer to free one).
func (m *mapWorker[In, Out]) stage(ctx context.Context, chunk []inflight[In]) (completion, error) {
	if err := m.apply(ctx, chunk); err != nil {
		return nil, err
	}
	var s *stagedOutputs[Out]
	select {
	case s = <-m.free:
	case <-ctx.Done():
		clear(m.outs)
		return nil, ctx.Err()
	}
	s.buf.skip = skipFound[In, Out](m.res, chunk) // what an earlier run wrote
	err := m.w.Stage(ctx, m.outs, &s.buf)
	s.buf.skip = nil
	clear(m.outs)
	if err != nil {
		m.free <- s
		return nil, err
	}
	return s, nil
}

// stagedChunks is how many chunks a map replica whose writes are staged
// cuts a read batch into: each chunk is a write of its own, and on durable
// storage every write is a flush to wait for, so it cuts as few as keep
// every worker busy. The reader holds up to MaxInFlight/BatchSize batches
// at once: with the defaults (4 batches, 4 workers) a batch goes whole to
// one worker, and the 4 workers map 4 batches side by side. Cutting each
// batch in 4 instead made 4 writes of 125 where one of 500 does, and the
// durable pipeline slower (BenchmarkDurable/mmap-immediate;
// docs/benchmarks.md).
func stagedChunks(o Options) int {
	batches := max(1, o.MaxInFlight/o.BatchSize)
	return max(1, (o.Concurrency+batches-1)/batches)
}

// stagedOutputs is the staged writes of one map chunk; complete returns it
// to its handler's free list.
type stagedOutputs[T any] struct {
	w    *Writer[T]
	buf  WriteBuffer[T]
	free chan<- *stagedOutputs[T]
}

func (s *stagedOutputs[T]) complete() error {
	err := s.w.Complete(&s.buf)
	s.free <- s
	return err
}

// mapChunk calls fn for every message of chunk, appending the outputs to
// outs; a failed (or panicking) call is retried alone as the retry policy
// says, and dropped when the policy allows. With st, every output gets its
// origin (st's scratch is reset first).
func mapChunk[In, Out any](ctx context.Context, cfg Config, fn AppendFunc[In, Out], chunk []inflight[In], outs []vertex.Message[Out], st *mapStamps) ([]vertex.Message[Out], error) {
	if st != nil {
		st.reset()
	}
	for i := 0; i < len(chunk); i++ {
		var err error
		if i, outs, err = mapEach(ctx, fn, chunk, i, outs, st); err == nil {
			break // every call from i on succeeded
		}
		// chunk[i] failed (or panicked): retry it alone. outs keeps
		// its length until a call succeeds, so a failed call's
		// partial appends are overwritten.
		m := &chunk[i].msg
		mark := len(outs)
		res, attempts, err := retryAfter(ctx, cfg, "map call", err, func() ([]vertex.Message[Out], error) {
			return guardAppend(ctx, fn, *m, outs[:mark])
		})
		if err != nil {
			if err := exhausted(ctx, cfg, m.ID, attempts, err); err != nil {
				return outs, err
			}
			continue
		}
		stampOutputs(st, res[mark:], chunk[i].partition, chunk[i].offset)
		outs = res
	}
	return outs, nil
}

// mapEach calls fn for chunk[from:] in order, appending to outs, until a
// call fails. It returns the index of the message that failed (len(chunk)
// when none did), the outputs of the calls that succeeded, and the error. A
// panic of fn is such a failure (a *vertex.PanicError): one guard covers the
// whole run of calls, so the common path pays no guard per message.
func mapEach[In, Out any](ctx context.Context, fn AppendFunc[In, Out], chunk []inflight[In], from int, outs []vertex.Message[Out], st *mapStamps) (at int, done []vertex.Message[Out], err error) {
	defer recoverPanic(&err) // at and done are as they were when the call panicked
	done = outs
	for at = from; at < len(chunk); at++ {
		res, err := fn(ctx, chunk[at].msg, done)
		if err != nil {
			return at, done, err
		}
		if st != nil {
			stampOutputs(st, res[len(done):], chunk[at].partition, chunk[at].offset)
		}
		done = res
	}
	return at, done, nil
}

// RunMapStream runs one replica of a map-stream vertex: each output fn
// emits is written before emit returns; the input is acked when fn returns
// nil. A retried call emits its outputs again.
func RunMapStream[In, Out any](hard, stop context.Context, cfg Config, in Input[In], edges []Edge[Out], fn vertex.MapStreamFunc[In, Out]) error {
	cfg = cfg.withFailures()
	rp := newReplica(hard, stop, cfg, in)
	w := NewWriter(edges, cfg.Counters, cfg.Hooks.Publisher, rp.r.watermark).reportingTo(cfg)
	rp.stage = stage[In]{mode: modeOf(cfg), out: w}
	for range rp.workers() {
		buf := &WriteBuffer[Out]{}
		one := make([]vertex.Message[Out], 1)
		rp.stage.handlers = append(rp.stage.handlers, func(ctx context.Context, chunk []inflight[In]) (completion, error) {
			emit := func(m vertex.Message[Out]) error {
				one[0] = m
				err := w.Write(ctx, one, buf)
				one[0] = vertex.Message[Out]{}
				return err
			}
			for i := range chunk {
				m := chunk[i].msg
				call := func() (_ struct{}, err error) {
					defer recoverPanic(&err)
					return struct{}{}, fn(ctx, m, emit)
				}
				if _, err := call(); err != nil {
					_, attempts, err := retryAfter(ctx, cfg, "map-stream call", err, call)
					if err != nil {
						if err := exhausted(ctx, cfg, m.ID, attempts, err); err != nil {
							return nil, err
						}
					}
				}
			}
			return nil, nil
		})
	}
	return rp.run()
}

// RunBatchMap runs one replica of a batch-map vertex: fn is called once per
// read batch, and the batch is acked when all outputs are written. When
// the retries of a batch are exhausted under DropMessage, the whole batch
// is dropped. A call that returns a number of results other than the
// number of messages fails the replica with [vertex.ErrResultCount], even
// after a retry and whatever the retry policy.
func RunBatchMap[In, Out any](hard, stop context.Context, cfg Config, in Input[In], edges []Edge[Out], fn vertex.BatchMapFunc[In, Out]) error {
	cfg = cfg.withFailures()
	fn = guardBatch(fn)
	rp := newReplica(hard, stop, cfg, in)
	w := NewWriter(edges, cfg.Counters, cfg.Hooks.Publisher, rp.r.watermark).reportingTo(cfg)
	rp.stage = stage[In]{mode: chunkWhole, out: w}
	for range rp.workers() {
		buf := &WriteBuffer[Out]{}
		var msgs []vertex.Message[In]
		var outs []vertex.Message[Out]
		rp.stage.handlers = append(rp.stage.handlers, func(ctx context.Context, chunk []inflight[In]) (completion, error) {
			msgs = msgs[:0]
			for i := range chunk {
				msgs = append(msgs, chunk[i].msg)
			}
			defer clear(msgs)
			res, err := fn(ctx, msgs)
			if err != nil {
				var attempts int
				res, attempts, err = retryAfter(ctx, cfg, "batch map call", err, func() ([][]vertex.Message[Out], error) {
					return fn(ctx, msgs)
				})
				if err != nil {
					if err := exhausted(ctx, cfg, msgs[0].ID, attempts, err); err != nil {
						return nil, err
					}
					cfg.Counters.drop(reasonRetries, len(msgs)-1) // exhausted counted one
					cfg.reportDrop(DropExhausted, len(msgs)-1)
					return nil, nil
				}
			}
			// Checked only on the call that succeeded, outside the retry
			// loop: a wrong count is a programming error, which a retry
			// cannot mend and the DropMessage policy must not hide by
			// dropping the batch, so the replica fails at once.
			if len(res) != len(msgs) {
				return nil, &vertex.ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica,
					Err: fmt.Errorf("%w: batch map returned %d results for %d messages", vertex.ErrResultCount, len(res), len(msgs))}
			}
			outs = outs[:0]
			for _, o := range res {
				outs = append(outs, o...)
			}
			err = w.Write(ctx, outs, buf)
			clear(outs)
			return nil, err
		})
	}
	return rp.run()
}

// modeOf picks how batches are split among workers.
func modeOf(cfg Config) chunking {
	if cfg.Options.OrderByKey {
		return chunkByKey
	}
	return chunkSpread
}
