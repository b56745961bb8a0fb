package forwarder

import (
	"cmp"
	"context"
	"maps"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/internal/keys"
	"github.com/runnel-dev/runnel/internal/window"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/wal"
)

// The shards of a reduce replica: each owns the open windows of the keys
// its worker is given, adds messages to them and writes the results of
// those the watermark closes (see RunReduce).

// reduceShard owns the windows of the keys its worker is given.
type reduceShard[In, S, Out any] struct {
	red *reduceReplica[In, S, Out]
	// oldest is the smallest end of an open window or of a window whose
	// results are being written (MaxInt64: none); the watermark reads it.
	oldest atomic.Int64
	// panes is the open panes the shard last counted in the replica's
	// OpenWindows (guarded by mu).
	panes int

	mu      sync.Mutex // guards the fields below: the worker and the ticker
	set     windowSet[In, S]
	wm      int64 // the shard's watermark, Unix ns: never decreases
	outs    []vertex.Message[vertex.Windowed[Out]]
	out     *WriteBuffer[vertex.Windowed[Out]]
	lates   []vertex.Message[In]
	lateBuf *WriteBuffer[In]
	key     []byte            // the encoded keys of the message being added (internal/keys)
	late    []window.Interval // markLate's scratch
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
// completer.go; the group commit shares one fsync among the chunks
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
	if end, ok := sh.set.oldestEnd(); !ok || !windowSpec(sh.red.spec.Window).ClosedAt(end, sh.wm) {
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
	sh.late = windowSpec(w).Assign(m.EventTime.UnixNano(), sh.late[:0])
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
		red.cfg.Counters.drop(reasonLate, n)
		red.cfg.reportDrop(DropLate, n, zap.String("id", sh.lates[0].ID), zap.Time("eventTime", sh.lates[0].EventTime))
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
	err := sh.set.closeUpTo(wm, func(iv window.Interval, p *pane[S]) error {
		if logged {
			sh.gcs = closedWindows(sh.gcs, iv, p)
		}
		win := toWindow(iv)
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
			_, attempts, err := retryAfter(ctx, red.cfg, "reduce result", err, call)
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
	// The open windows move with the oldest end: after a chunk, a close,
	// a replay. One add per chunk, none when nothing opened or closed.
	if n := sh.set.size(); n != sh.panes {
		sh.red.cfg.Counters.openWindows.Add(int64(n - sh.panes))
		sh.panes = n
	}
}

// resultID names a result: vertex, window, keys and, after the first
// result of a window and key, its index: "vertex/start-end/key1/key2#i".
// In a key, '%', '/' and '#' are escaped as %25, %2F and %23, so distinct
// key lists give distinct IDs ({"a/b"} is "/a%2Fb", {"a","b"} "/a/b"; nil
// has no key part, {""} an empty one): a sink deduplicating by ID never
// takes one result for another.
func resultID(vertexName string, iv window.Interval, keys []string, i int) string {
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
