package forwarder

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnel-dev/runnel/internal/keys"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/wal"
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
	red.w = NewWriter(edges, cfg.Counters, cfg.Hooks.Publisher, red.watermark)
	red.late = NewWriter(spec.Late, cfg.Counters, cfg.Hooks.Publisher, red.watermark)
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

// reduceShard owns the windows of the keys its worker is given.
type reduceShard[In, S, Out any] struct {
	red *reduceReplica[In, S, Out]
	// oldest is the smallest end of an open window or of a window whose
	// results are being written (MaxInt64: none); the watermark reads it.
	oldest atomic.Int64

	mu      sync.Mutex // guards the fields below: the worker and the ticker
	set     windowSet[In, S]
	wm      int64 // the shard's watermark, Unix ns: never decreases
	outs    []vertex.Message[vertex.Windowed[Out]]
	out     *WriteBuffer[vertex.Windowed[Out]]
	lates   []vertex.Message[In]
	lateBuf *WriteBuffer[In]
	key     []byte            // the encoded keys of the message being added (internal/keys)
	late    []vertex.Interval // markLate's scratch
	// With a log: the entries of the chunk (their values and windows in
	// the scratch buffers, cut by spans) and the windows closed.
	entries []wal.Entry
	spans   [][4]int
	vals    []byte
	wins    []wal.Window
	gcs     []wal.Window
}

// handle is the shard's worker's handler: it adds a chunk's messages to the shard's windows and sends the late
// ones to the late stream. Each message is judged late or not against the
// watermark it was read with: before it is added, the windows that
// watermark closes are closed (and their results written), so it never
// joins a window that is closed, and the outcome does not depend on where
// chunks begin or when the ticker ran (see closeDue).
//
// With a log, it hands the chunk's entries to the WAL and returns them as
// the chunk's pending write: the worker's completer acks the chunk once
// they are durable, while the worker goes on with the next chunks (see
// staged_worker.go; the group commit shares one fsync among the chunks
// appended meanwhile). Without one, the chunk is acked when handle returns.
func (sh *reduceShard[In, S, Out]) handle(ctx context.Context, chunk []inflight[In]) (completion, error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.lates = sh.lates[:0]
	red := sh.red
	// Windows replayed from the log may be closed at the recovered
	// watermark before any message raises it: they close first.
	last, err := sh.closeDue(ctx)
	if err != nil {
		return nil, err
	}
	for i := range chunk {
		it := &chunk[i]
		m := &it.msg
		if red.logged != nil && red.alreadyLogged(it.partition, it.offset) {
			continue // redelivered after a restart: in the log already
		}
		if wm := m.Watermark.UnixNano(); !m.Watermark.IsZero() && wm > sh.wm {
			sh.wm = wm
			p, err := sh.closeDue(ctx)
			if err != nil {
				return nil, err
			}
			last = cmp.Or(p, last) // the log writes appends in order: the last one is the chunk's
		}
		sh.key = keys.Append(sh.key[:0], m.Keys)
		if judged := red.lateAt(it.partition, sh.wm); !sh.set.add(m, sh.key, judged) {
			sh.lates = append(sh.lates, sh.markLate(*m, judged))
			continue
		}
		if red.spec.Log != nil {
			if err := sh.logEntry(it); err != nil {
				return nil, err
			}
		}
	}
	// Durable before the chunk is acked: the wait is the chunk's settling.
	p, err := sh.appendLogged(ctx)
	if err != nil {
		return nil, err
	}
	last = cmp.Or(p, last)
	// The windows the chunk opened hold the published watermark back
	// before the chunk is acked.
	sh.noteOldest()
	if err := sh.writeLate(ctx); err != nil {
		return nil, err
	}
	if last == nil {
		return nil, nil
	}
	return loggedChunk{ctx, last}, nil
}

// closeDue closes the windows the shard's watermark closes, before the
// chunk's next message is added (its watermark was just taken). The
// chunk's entries so far are handed to the log first: a window's results
// are written only once every entry it holds is durable (closeUpTo waits
// for the last append), and those entries are the pending write of the
// chunk as much as the rest. It returns that append (nil: none). sh.mu is
// held.
func (sh *reduceShard[In, S, Out]) closeDue(ctx context.Context) (*wal.Pending, error) {
	if end, ok := sh.set.oldestEnd(); !ok || !sh.red.spec.Window.ClosedAt(end, sh.wm) {
		return nil, nil // nothing closes: the common case, one comparison
	}
	p, err := sh.appendLogged(ctx)
	if err != nil {
		return nil, err
	}
	return p, sh.closeUpTo(ctx, sh.wm)
}

// markLate returns m with the headers that say why it is late: the
// watermark it was judged against (the shard's, at least the one it was
// read with) and the end and close of the latest window it belonged to
// (closed: end + allowed lateness <= watermark). m's headers are shared,
// so they are copied.
func (sh *reduceShard[In, S, Out]) markLate(m vertex.Message[In], judged int64) vertex.Message[In] {
	w := sh.red.spec.Window
	end := int64(math.MinInt64)
	sh.late = w.AssignUnixNano(m.EventTime.UnixNano(), sh.late[:0])
	for _, iv := range sh.late {
		end = max(end, iv.End)
	}
	h := make(map[string]string, len(m.Headers)+3)
	maps.Copy(h, m.Headers)
	stamp := func(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }
	h[vertex.LateWatermarkHeader] = stamp(judged)
	h[vertex.LateWindowEndHeader] = stamp(end)
	h[vertex.LateClosedAtHeader] = stamp(end + int64(w.AllowedLateness))
	m.Headers = h
	return m
}

// writeLate writes the late messages of the chunk to the late stream, or
// counts them dropped when there is none. sh.mu is held.
func (sh *reduceShard[In, S, Out]) writeLate(ctx context.Context) error {
	n := len(sh.lates)
	if n == 0 {
		return nil
	}
	red := sh.red
	red.cfg.Counters.late.Add(int64(n))
	defer clear(sh.lates)
	if len(red.spec.Late) == 0 {
		red.cfg.Counters.dropped.Add(int64(n))
		return nil
	}
	return red.late.Write(ctx, sh.lates, sh.lateBuf)
}

// closeUpTo emits and writes every window closed at wm. sh.mu is held.
// The shard's oldest end moves only after the results are written, so the
// published watermark never passes a result still to be written.
func (sh *reduceShard[In, S, Out]) closeUpTo(ctx context.Context, wm int64) error {
	red := sh.red
	sh.outs = sh.outs[:0]
	logged := red.spec.Log != nil
	err := sh.set.closeUpTo(wm, func(iv vertex.Interval, p *pane[S]) error {
		if logged {
			sh.gcs = closedWindows(sh.gcs, iv, p)
		}
		win := iv.Window()
		mark := len(sh.outs)
		emit := func(v Out) error {
			sh.outs = append(sh.outs, vertex.Message[vertex.Windowed[Out]]{
				ID:        resultID(red.cfg.Vertex, iv, p.keys, len(sh.outs)-mark),
				EventTime: time.Unix(0, iv.End-int64(time.Millisecond)),
				Keys:      p.keys,
				Value:     vertex.Windowed[Out]{Window: win, Keys: p.keys, Value: v},
			})
			return nil
		}
		call := func() (struct{}, error) {
			sh.outs = sh.outs[:mark] // a retried call emits again
			return struct{}{}, red.spec.Reducer.result(ctx, win, p.keys, p.state, emit)
		}
		if _, err := call(); err != nil {
			_, attempts, err := retryAfter(ctx, red.cfg.Options.Retry, red.cfg.Counters, err, call)
			if err != nil {
				sh.outs = sh.outs[:mark]
				return exhausted(ctx, red.cfg, resultID(red.cfg.Vertex, iv, p.keys, 0), attempts, err)
			}
		}
		return nil
	})
	if err == nil && (len(sh.outs) > 0 || len(sh.gcs) > 0) {
		// Results only of durable entries: a crash after they are written
		// re-emits them from the log alone, the same messages in the same
		// order, never from redelivered ones read in another order.
		err = sh.logDurable(ctx)
	}
	if err == nil && len(sh.outs) > 0 {
		if err = red.w.Write(ctx, sh.outs, sh.out); err == nil {
			red.cfg.Counters.results.Add(int64(len(sh.outs)))
		}
	}
	clear(sh.outs)
	if err == nil && logged {
		// The results are written: the windows may leave the log.
		err = sh.logClosed(ctx, wm)
	}
	clear(sh.gcs)
	sh.gcs = sh.gcs[:0]
	sh.noteOldest()
	return err
}

// noteOldest publishes the shard's oldest open window end for the
// watermark. sh.mu is held (or the shard not yet running).
func (sh *reduceShard[In, S, Out]) noteOldest() {
	if end, ok := sh.set.oldestEnd(); ok {
		sh.oldest.Store(end)
	} else {
		sh.oldest.Store(math.MaxInt64)
	}
}

// resultID names a result: vertex, window, keys and, after the first
// result of a window and key, its index: "vertex/start-end/key1/key2#i".
// In a key, '%', '/' and '#' are escaped as %25, %2F and %23, so distinct
// key lists give distinct IDs ({"a/b"} is "/a%2Fb", {"a","b"} "/a/b"; nil
// has no key part, {""} an empty one): a sink deduplicating by ID never
// takes one result for another.
func resultID(vertexName string, iv vertex.Interval, keys []string, i int) string {
	b := make([]byte, 0, 64)
	b = append(b, vertexName...)
	b = append(b, '/')
	b = strconv.AppendInt(b, iv.Start, 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, iv.End, 10)
	for _, k := range keys {
		b = append(b, '/')
		b = appendEscapedKey(b, k)
	}
	if i > 0 {
		b = append(b, '#')
		b = strconv.AppendInt(b, int64(i), 10)
	}
	return string(b)
}

// appendEscapedKey appends k with '%', '/' and '#' percent-escaped.
func appendEscapedKey(b []byte, k string) []byte {
	for i := 0; i < len(k); i++ {
		switch c := k[i]; c {
		case '%', '/', '#':
			const hex = "0123456789ABCDEF"
			b = append(b, '%', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
	}
	return b
}

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

// raise raises the shard's watermark to wm and closes what that closes.
func (sh *reduceShard[In, S, Out]) raise(ctx context.Context, wm int64) error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if wm < sh.wm {
		return nil
	}
	sh.wm = wm
	return sh.closeUpTo(ctx, wm)
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
