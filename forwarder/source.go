package forwarder

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnel-dev/runnel/vertex"
)

// RunSource runs one replica of a source vertex: it reads batches from src
// until src is exhausted or soft ends, stamps them (event time, watermark,
// lateness), writes them to edges and then acks them to src when it is a
// vertex.Acker. Writes and acks use hard, so a batch read before soft ended
// is still delivered. The source partition the watermark hook sees is the
// replica index; a read that returns no message and no error is an idle
// read (see IdleSource), so a source that can go quiet should return an
// empty batch now and then rather than block until data comes.
func RunSource[T any](soft, hard context.Context, cfg Config, src vertex.Source[T], edges []Edge[T]) error {
	// The source learns which replica (source partition) reads.
	id := vertex.Replica{Vertex: cfg.Vertex, Index: cfg.Replica}
	soft, hard = vertex.WithReplica(soft, id), vertex.WithReplica(hard, id)
	var wm atomic.Int64 // the source watermark, unix ns
	w := NewWriter(edges, cfg.Counters, cfg.Hooks.Publisher, func() time.Time {
		if ns := wm.Load(); ns != 0 {
			return time.Unix(0, ns)
		}
		return time.Time{}
	})
	buf := &WriteBuffer[T]{}
	acker, _ := src.(vertex.Acker[T])
	buffered, _ := src.(vertex.BufferedSource[T])
	var readBuf []vertex.Message[T]
	if buffered != nil {
		readBuf = make([]vertex.Message[T], cfg.Options.BatchSize)
	}
	fail := func(err error) error {
		return &ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica, Err: err}
	}
	idleSrc, _ := cfg.Hooks.Source.(IdleSource)
	if ip, ok := cfg.Hooks.Publisher.(IdlePublisher); ok {
		// Output partitions this replica stops writing to (the source went
		// quiet, or round-robin skips them) get idle WMBs.
		idleCtx, stopIdle := context.WithCancel(hard)
		var idleWG sync.WaitGroup
		idleWG.Go(func() { w.idleLoop(idleCtx, ip, cfg.Hooks.idleInterval(), failWith(cfg)) })
		defer idleWG.Wait()
		defer stopIdle()
	}
	for {
		if soft.Err() != nil {
			// A source that never blocks would not notice ctx by itself.
			return nil
		}
		msgs, err := read(soft, src, buffered, readBuf, cfg.Options.BatchSize)
		// Messages that come with an error (io.EOF, ctx's error, a failure:
		// ReadInto may return n > 0 with any of them, as io.Reader does) were
		// taken from the source all the same: they are written and acked
		// before the error is handled, or they would be lost.
		if n := len(msgs); n > 0 {
			cfg.Counters.read.Add(int64(n))
			cfg.Counters.enter(n)
			stamp(msgs, cfg, &wm)
			if werr := w.Write(hard, msgs, buf); werr != nil {
				cfg.Counters.inFlight.Add(-int64(n))
				if hard.Err() != nil {
					return nil
				}
				return fail(werr)
			}
			if acker != nil {
				if aerr := acker.Ack(hard, msgs); aerr != nil {
					// Written but not acked to the source: neither acked
					// nor in flight any more.
					cfg.Counters.inFlight.Add(-int64(n))
					if hard.Err() != nil {
						return nil
					}
					return fail(aerr)
				}
			}
			cfg.Counters.acked.Add(int64(n))
			cfg.Counters.inFlight.Add(-int64(n))
		}
		if err != nil {
			if errors.Is(err, io.EOF) || soft.Err() != nil {
				return nil
			}
			return fail(err)
		}
		if len(msgs) == 0 && idleSrc != nil {
			// A read that found nothing: an idle source partition advances.
			if adv, ok := idleSrc.IdleAdvance(cfg.Replica); ok {
				raise(&wm, adv)
			}
		}
	}
}

// read reads the next batch, into buf when the source can.
func read[T any](ctx context.Context, src vertex.Source[T], buffered vertex.BufferedSource[T], buf []vertex.Message[T], batch int) ([]vertex.Message[T], error) {
	if buffered == nil {
		return src.Read(ctx, batch)
	}
	n, err := buffered.ReadInto(ctx, buf)
	return buf[:n], err
}

// stamp gives messages without an event time the current time and, with a
// source watermark hook, sets each message's watermark and lateness.
func stamp[T any](msgs []vertex.Message[T], cfg Config, wm *atomic.Int64) {
	var now, minET time.Time
	for i := range msgs {
		m := &msgs[i]
		if m.EventTime.IsZero() {
			if now.IsZero() {
				now = time.Now()
			}
			m.EventTime = now
		}
		if minET.IsZero() || m.EventTime.Before(minET) {
			minET = m.EventTime
		}
	}
	if cfg.Hooks.Source == nil {
		return
	}
	w := cfg.Hooks.Source.Observe(cfg.Replica, minET)
	for i := range msgs {
		msgs[i].Watermark = w
		msgs[i].Late = msgs[i].EventTime.Before(w)
	}
	raise(wm, w)
}

// raise raises the source watermark wm (unix ns) to w; the idle loop reads
// it concurrently.
func raise(wm *atomic.Int64, w time.Time) {
	if w.IsZero() {
		return
	}
	ns := w.UnixNano()
	if ns > wm.Load() {
		wm.Store(ns) // only the source loop writes wm
	}
}
