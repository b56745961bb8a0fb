package forwarder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/runnel-dev/runnel/internal/replicactx"
	"github.com/runnel-dev/runnel/vertex"
)

// RunSource runs one replica of a source vertex: it reads batches from src
// until src is exhausted or stop ends, stamps them (event time, watermark,
// lateness), writes them to edges and then acks them to src when it is a
// vertex.Acker. Writes and acks use hard, so a batch read before stop ended
// is still delivered. The source partition the watermark hook sees is the
// replica index; a read that returns no message and no error is an idle
// read (see IdleSource), so a source that can go quiet should return an
// empty batch now and then rather than block until data comes. A
// vertex.PartitionedSource, which reads several partitions, gets a
// watermark per partition when the hook is an InputWatermarker (see
// sourceMarks). Its
// contexts come in the order of every runner (see runReplica): hard, then
// stop, derived from hard.
//
// When src is exhausted (io.EOF) the replica ends its output Final: an
// end-of-stream message on every partition of every edge, its source
// partition's watermark watermark.Max, published there (EndSource,
// EndPublisher); when stop ends first, it ends its output Stopped, so the
// vertices downstream drain and end without claiming a watermark. When hard
// ends or the source fails, it writes nothing more.
func RunSource[T any](hard, stop context.Context, cfg Config, src vertex.Source[T], edges []Edge[T]) error {
	return RunResumedSource(hard, stop, cfg, src, edges, nil)
}

// RunResumedSource is RunSource for a resumable source on durable storage:
// before the first read it writes and acknowledges what res found an
// earlier run wrote, once for all replicas (see SourceResume), and it
// registers every batch in res from its read to its acknowledgement, for
// the anchors saved with the source's position. A nil res is RunSource.
func RunResumedSource[T any](hard, stop context.Context, cfg Config, src vertex.Source[T], edges []Edge[T], res *SourceResume[T]) error {
	// The source learns which replica (source partition) reads.
	id := vertex.Replica{Vertex: cfg.Vertex, Index: cfg.Replica}
	hard, stop = replicactx.With(hard, id), replicactx.With(stop, id)
	if res != nil {
		acker, ok := src.(vertex.Acker[T])
		if !ok {
			return &ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica, Err: fmt.Errorf("a resumed source must be a vertex.Acker")}
		}
		if err := res.begin(hard, cfg, edges, acker); err != nil {
			if hard.Err() != nil {
				return nil
			}
			return &ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica, Err: err}
		}
	}
	marks := newSourceMarks(cfg, src)
	wm := &marks.wm
	w := NewWriter(edges, cfg.Counters, cfg.Hooks.Publisher, func() time.Time {
		if ns := wm.Load(); ns != 0 {
			return time.Unix(0, ns)
		}
		return time.Time{}
	})
	stopIdle := func() {}
	if ip, ok := cfg.Hooks.Publisher.(IdlePublisher); ok {
		// Output partitions this replica stops writing to (the source went
		// quiet, or round-robin skips them) get idle WMBs.
		idleCtx, cancel := context.WithCancel(hard)
		var idleWG sync.WaitGroup
		idleWG.Go(func() { w.idleLoop(idleCtx, ip, cfg.Hooks.idleInterval(), failWith(cfg)) })
		stopIdle = sync.OnceFunc(func() { cancel(); idleWG.Wait() })
		defer stopIdle()
	}
	kind, err := readSource(hard, stop, cfg, src, w, marks, res)
	if err != nil || kind == 0 {
		return err
	}
	// The idle loop stops first: no idle control message follows the end.
	stopIdle()
	if kind == Final {
		if es, ok := cfg.Hooks.Source.(EndSource); ok {
			raise(wm, es.End(cfg.Replica))
		}
	}
	if err := w.WriteEnd(hard, cfg.Processor(), kind); err != nil && hard.Err() == nil {
		return &ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica, Err: err}
	}
	return nil
}

// readSource is RunSource's loop: it reads, stamps, writes and acks until
// src is exhausted (Final), stop ends (Stopped), hard ends (0, nil) or
// something fails (the error). On storage that stages writes it keeps
// several batches in flight (see source_batches.go); every batch is
// complete (durable, acked) or dropped after a failure when it returns.
func readSource[T any](hard, stop context.Context, cfg Config, src vertex.Source[T], w *Writer[T], marks *sourceMarks[T], res *SourceResume[T]) (EndKind, error) {
	acker, _ := src.(vertex.Acker[T])
	buffered, _ := src.(vertex.BufferedSource[T])
	readSize := 0
	if buffered != nil {
		readSize = cfg.Options.BatchSize
	}
	fail := func(err error) (EndKind, error) {
		if hard.Err() != nil {
			return 0, nil
		}
		return 0, &ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica, Err: err}
	}
	finish := func(b *sourceBatch[T]) error {
		n := int64(len(b.msgs))
		err := w.Complete(&b.out)
		if err == nil && acker != nil {
			err = guardedAck(hard, acker, b.msgs)
		}
		if res != nil {
			res.release(cfg.Replica, b)
		}
		if err != nil {
			// Written (or staged) but not acked to the source: neither
			// acked nor in flight any more.
			cfg.Counters.inFlight.Add(-n)
			return err
		}
		cfg.Counters.acked.Add(n)
		cfg.Counters.inFlight.Add(-n)
		return nil
	}
	drop := func(b *sourceBatch[T]) {
		cfg.Counters.inFlight.Add(-int64(len(b.msgs)))
		if res != nil {
			res.release(cfg.Replica, b)
		}
	}
	depth := 1
	if w.Stages() {
		depth = sourceStagedBatches
	}
	batches := newSourceBatches(depth, readSize, finish, drop)
	kind, err := readBatches(hard, stop, cfg, src, buffered, w, marks, batches, res)
	if cerr := batches.close(); err == nil && cerr != nil {
		return fail(cerr)
	}
	if err != nil {
		return fail(err)
	}
	return kind, nil
}

// readBatches is readSource's loop over batches; a nil error with kind 0
// is hard ending.
func readBatches[T any](hard, stop context.Context, cfg Config, src vertex.Source[T], buffered vertex.BufferedSource[T], w *Writer[T], marks *sourceMarks[T], batches *sourceBatches[T], res *SourceResume[T]) (EndKind, error) {
	for {
		if hard.Err() != nil {
			return 0, nil
		}
		if stop.Err() != nil {
			// A source that never blocks would not notice ctx by itself.
			return Stopped, nil
		}
		b := batches.take(hard)
		if b == nil {
			return 0, nil // hard ended, or the completer failed: close reports it
		}
		msgs, err := guardedRead(stop, src, buffered, b.read, cfg.Options.BatchSize)
		b.msgs = msgs
		// Messages that come with an error (io.EOF, ctx's error, a failure:
		// ReadInto may return n > 0 with any of them, as io.Reader does) were
		// taken from the source all the same: they are written and acked
		// before the error is handled, or they would be lost.
		if n := len(msgs); n > 0 {
			cfg.Counters.read.Add(int64(n))
			cfg.Counters.enter(n)
			marks.stamp(msgs)
			if res != nil {
				res.register(cfg.Replica, b) // before its records are staged
			}
			if werr := w.Stage(hard, msgs, &b.out); werr != nil {
				cfg.Counters.inFlight.Add(-int64(n))
				if res != nil {
					res.release(cfg.Replica, b)
				}
				return 0, werr
			}
			if ferr := batches.submit(b); ferr != nil {
				return 0, ferr
			}
		} else {
			batches.put(b)
		}
		if err != nil {
			switch {
			case errors.Is(err, io.EOF):
				return Final, nil
			case stop.Err() != nil && hard.Err() == nil:
				return Stopped, nil
			}
			return 0, err
		}
		marks.idle(msgs)
	}
}
