package forwarder

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/watermark"
)

// Reducer is a reduce function in the form RunReduce runs it, whatever its
// user-facing form: S is the state of one window for one key. Make one with
// Aggregate or StreamReduce.
type Reducer[In, S, Out any] struct {
	ops reduceOps[In, S]
	// result calls emit with the outputs of a closed window's state.
	result func(ctx context.Context, w vertex.Window, keys []string, s S, emit func(Out) error) error
}

// Aggregate runs an incremental aggregator: O(1) state per window.
func Aggregate[In, Acc, Out any](a vertex.Aggregator[In, Acc, Out]) Reducer[In, Acc, Out] {
	return Reducer[In, Acc, Out]{
		ops: reduceOps[In, Acc]{create: a.Create, add: a.Add, merge: a.Merge},
		result: func(_ context.Context, _ vertex.Window, _ []string, acc Acc, emit func(Out) error) error {
			return emit(a.Result(acc))
		},
	}
}

// StreamReduce runs a streaming reducer: each window keeps its messages
// until it closes, then fn receives them in the order they were added.
func StreamReduce[In, Out any](fn vertex.ReduceStreamFunc[In, Out]) Reducer[In, []vertex.Message[In], Out] {
	return Reducer[In, []vertex.Message[In], Out]{
		ops: reduceOps[In, []vertex.Message[In]]{
			create: func() []vertex.Message[In] { return nil },
			add:    func(s []vertex.Message[In], m vertex.Message[In]) []vertex.Message[In] { return append(s, m) },
			merge:  func(a, b []vertex.Message[In]) []vertex.Message[In] { return append(a, b...) },
		},
		result: func(ctx context.Context, w vertex.Window, keys []string, s []vertex.Message[In], emit func(Out) error) error {
			return fn(ctx, w, keys, slices.Values(s), emit)
		},
	}
}

// ReduceSpec is what a reduce replica computes: how it windows and with
// which function.
type ReduceSpec[In, S, Out any] struct {
	Window  vertex.Windowing // validated
	Reducer Reducer[In, S, Out]
	// Late are the edges of the late-data stream: messages whose windows
	// are all closed. Without them, late messages are dropped and counted
	// (Stats.Late and Stats.Dropped).
	Late []Edge[In]
	// Log, when not nil, keeps the replica's windows across crashes (see
	// ReduceLog); without it they live in memory only.
	Log *ReduceLog[In]
}

// RunReduce runs one replica of a reduce vertex: it reads its partitions
// (an edge into a reduce vertex routes by keys, so a key always reaches the
// same replica), assigns every message to its windows, and emits each
// window's result per key when the watermark closes it (watermark >= end +
// allowed lateness). Results go to edges as vertex.Windowed values with
// event time end - 1ms; late messages go to spec.Late, with headers saying
// what made them late (vertex.LateWatermarkHeader and the two after it).
//
// Lateness: a message is judged against the watermark it was read with.
// Before it is added, every window that watermark closes is closed (its
// results written), so a message never joins a closed window: a session
// closed at its watermark is not merged with it, a fixed or sliding window
// closed at it does not take it. The same input with the same watermarks
// therefore gives the same results whatever the chunks and the ticker do.
// (The same records replayed faster are read at lower watermarks, so fewer
// of them may be late than in real time.)
//
// Keys: a message's windows are those of its key list, encoded without
// ambiguity (internal/keys: {"a","b"} and {"a\x00b"}, nil and {""} are
// different keys), and its shard is a fixed hash of that encoding, the same
// in every process.
//
// Concurrency: the replica's keys are split over Options.Concurrency
// shards by key hash; each shard owns its windows and is driven by its
// worker (on every chunk) and by a ticker (so that windows close as the
// watermark advances when no data comes).
//
// Acknowledgement: a message is acked (and its offset committed) once it
// is added to its windows (with a log: once its WAL entry is durable, which
// the worker does not wait for), not when they close.
//
// End of stream: the replica ends once its input has ended (see eos.go).
// When every upstream stream ended Final, its watermark is watermark.Max,
// which closes every open window by the watermark path (closeUpTo, as any
// watermark does); the results are written, then the replica ends its
// output with its own end of stream. When the input ended Stopped (the
// pipeline was cancelled and drained), open windows are emitted as they
// are: at-least-once means nothing acknowledged may be lost, and on memory
// storage the windows are the only copy of the acked messages, which go
// when the process ends. Such a result covers what the window had received
// when the pipeline stopped. When hard ends (a failure), nothing more is
// emitted.
//
// Watermark: the replica publishes min(watermark - lateness, oldest open
// window end) - 1ms, where watermark is its reader's (lowest in flight or
// newest read). Every result it may still emit has an event time at or
// above it, so no result is late for a downstream reduce. (The lateness
// term matters: a message inside the lateness may open a window that ends
// below the watermark.)
func RunReduce[In, S, Out any](hard, stop context.Context, cfg Config, in Input[In], edges []Edge[vertex.Windowed[Out]], spec ReduceSpec[In, S, Out]) error {
	cfg = cfg.withFailures()
	if spec.Log != nil {
		// One shard: each partition's entries in offset order (see
		// ReduceLog). Package pipeline refuses a Concurrency above 1 for a
		// reduce on durable storage, so only a caller of this package
		// sees the option not used.
		cfg.Options.Concurrency = 1
	}
	rp := newReplica(hard, stop, cfg, in)
	red := newReduceReplica(cfg, spec)
	if spec.Log != nil {
		if err := red.recover(in.Consumer.Assigned()); err != nil {
			return asProcessError(cfg, err)
		}
	}
	red.r = rp.r
	red.w = NewWriter(edges, cfg.Counters, cfg.Hooks.Publisher, red.watermark).reportingTo(cfg)
	red.late = NewWriter(spec.Late, cfg.Counters, cfg.Hooks.Publisher, red.watermark).reportingTo(cfg)
	// One shard per worker, dispatched by key hash; with a log, a chunk
	// is acked once its entries are durable.
	rp.stage = stage[In]{mode: chunkByKey, out: red, stages: spec.Log != nil}
	for _, sh := range red.shards {
		rp.stage.handlers = append(rp.stage.handlers, sh.handle)
	}
	return rp.run()
}

// newReduceReplica returns the state of a reduce replica, with one shard
// per worker.
func newReduceReplica[In, S, Out any](cfg Config, spec ReduceSpec[In, S, Out]) *reduceReplica[In, S, Out] {
	red := &reduceReplica[In, S, Out]{cfg: cfg, spec: spec, lateness: int64(spec.Window.AllowedLateness)}
	// Session ids start at the clock, so that a restart never reuses the id
	// of a session closed (and compacted away) before it.
	red.ids = &red.ownIDs
	red.ownIDs.Store(uint64(time.Now().UnixNano()))
	if spec.Log != nil && spec.Log.SessionIDs != nil {
		red.ids = spec.Log.SessionIDs // the vertex's, set by the caller
	}
	red.shards = make([]*reduceShard[In, S, Out], cfg.Options.Concurrency)
	for i := range red.shards {
		red.shards[i] = &reduceShard[In, S, Out]{red: red, set: newWindowSet(spec.Window, spec.Reducer.ops, red.newSessionID),
			wm: math.MinInt64, out: &WriteBuffer[vertex.Windowed[Out]]{}, lateBuf: &WriteBuffer[In]{}}
		red.shards[i].oldest.Store(math.MaxInt64)
	}
	return red
}

// reduceReplica is the state of one reduce replica.
type reduceReplica[In, S, Out any] struct {
	cfg      Config
	spec     ReduceSpec[In, S, Out]
	lateness int64
	shards   []*reduceShard[In, S, Out]
	r        *reader[In]
	w        *Writer[vertex.Windowed[Out]]
	late     *Writer[In]
	ids      *atomic.Uint64 // the last session id given out: ownIDs, or the vertex's (ReduceLog.SessionIDs)
	ownIDs   atomic.Uint64
	logged   map[int32]int64 // with a log: the highest offset logged per partition before this run
	logs     *replicaLogs    // with a log: one per partition read (reduce_wal.go)
}

// newSessionID returns a new session id for the WAL.
func (red *reduceReplica[In, S, Out]) newSessionID() uint64 { return red.ids.Add(1) }

// watermark is what the replica publishes: min(reader watermark -
// lateness, oldest open window end) - 1ms; zero until the reader has one.
func (red *reduceReplica[In, S, Out]) watermark() time.Time {
	if red.r == nil {
		return time.Time{}
	}
	w := red.r.watermark()
	if w.IsZero() {
		return w
	}
	low := w.UnixNano() - red.lateness
	for _, sh := range red.shards {
		low = min(low, sh.oldest.Load())
	}
	return time.Unix(0, low-int64(time.Millisecond))
}

// tickLoop closes windows as the watermark advances without data: every
// idle interval each shard is raised to the reader's watermark (which is
// never above a message still in flight, so a message waiting for its
// shard is judged late or not on its own watermark, not on a later one).
func (red *reduceReplica[In, S, Out]) tickLoop(ctx context.Context) error {
	if red.cfg.Hooks.Fetcher == nil {
		return nil // no watermarks: windows close at the end of stream only
	}
	return onTicks(ctx, red.cfg.Hooks.idleInterval(), func() error {
		w := red.r.watermark()
		if w.IsZero() {
			return nil
		}
		for _, sh := range red.shards {
			if err := sh.raise(ctx, w.UnixNano()); err != nil {
				return err
			}
		}
		return nil
	})
}

// endInput closes the windows once the input has ended: a Final end has the
// maximum watermark, which closes every window; after a Stopped end every
// open window is emitted as it is (see RunReduce). Every shard is raised,
// so the results are written before the replica ends its output.
func (red *reduceReplica[In, S, Out]) endInput(ctx context.Context, kind EndKind) error {
	if kind == Stopped && red.spec.Log != nil {
		return red.closeOutOnStop(ctx) // the log keeps the open windows, unless EmitOnStop
	}
	for _, sh := range red.shards {
		if err := sh.raise(ctx, watermark.Max.UnixNano()); err != nil {
			return err
		}
	}
	return nil
}

// WriteEnd implements output: the replica's end of stream goes to the
// result edges and to the late stream's edges.
func (red *reduceReplica[In, S, Out]) WriteEnd(ctx context.Context, processor string, kind EndKind) error {
	if err := red.w.WriteEnd(ctx, processor, kind); err != nil {
		return err
	}
	return red.late.WriteEnd(ctx, processor, kind)
}

// idleLoop implements output for both writers: an idle partition of the
// late stream's edges gets its control message from the late writer.
func (red *reduceReplica[In, S, Out]) idleLoop(ctx context.Context, idle IdlePublisher, every time.Duration) error {
	write := func(ctx context.Context, to string, partition int) (int64, error) {
		off, err := red.w.WriteControl(ctx, to, partition)
		if errors.Is(err, ErrNoSuchEdge) {
			return red.late.WriteControl(ctx, to, partition)
		}
		return off, err
	}
	return runIdleLoop(ctx, idle, every, red.watermark, write)
}
