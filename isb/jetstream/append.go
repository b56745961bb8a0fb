package jetstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/isb"
)

// Appends.
//
// An append encodes its items, sends them asynchronously (at most
// MaxOutstanding of the backend in flight) with the message id
// {backend id}.{partition}.{sequence} and returns a deferred isb.Write
// (Caps.Deferred): a producer that keeps several writes in flight (the
// topic's StageTo, a pipeline's source) overlaps their round trips. The
// Write's Complete waits for every acknowledgement. A publish that fails
// in a way that heals (no acknowledgement within AckTimeout, no responders
// while the server restarts, a lost connection) is sent again with the
// same id until RetryTimeout: the server stores a message once per id
// within the Duplicates window, and acknowledges a repeated one with the
// sequence of the first, so a retry after a lost acknowledgement is no
// duplicate.
//
// On a packed stream (Packed) the items are cut into frames, at most
// FrameItems items and FrameBytes bytes each, and every frame is one
// message with one id: what is retried, deduplicated and acknowledged is
// the frame, so a frame is stored whole or not at all, and once.
//
// The offsets of an append are in order but not necessarily contiguous:
// appends of other goroutines and processes to the same stream interleave
// with it, and a retry may store a message after a later write's. The
// Write's last offset is exact once complete (-1 before): all the topic
// uses (ProduceTo's last offset, a batch's last offset per partition).

// AppendOne appends one item.
func (l *log[T]) AppendOne(item T) (isb.Write, error) { return l.Append([]T{item}) }

// Append sends items and returns their Write (see above). A partition
// whose usage is at its limit, as this process knows it, is an error
// matching isb.ErrFull and nothing is sent.
func (l *log[T]) Append(items []T) (isb.Write, error) {
	n := len(items)
	if n == 0 {
		return isb.Completed(l.Tail() - 1), nil
	}
	l.smu.RLock()
	defer l.smu.RUnlock()
	switch {
	case l.sealed:
		return isb.Write{}, isb.ErrClosed
	case l.deleted.Load():
		return isb.Write{}, l.deletedErr("append")
	case l.full(n):
		return isb.Write{}, &StreamError{Stream: l.stream, Op: "append", Kind: isb.ErrFull,
			Err: fmt.Errorf("%d items uncommitted, usage limit %d", l.used(), l.b.cfg.usageLimit)}
	}
	w := &write[T]{l: l, sc: scratches.Get().(*scratch)}
	encode := l.encode
	if l.b.cfg.packed() {
		encode = l.encodeFrames
	}
	msgs, err := encode(w.sc, items)
	if err != nil {
		scratches.Put(w.sc)
		return isb.Write{}, err
	}
	w.msgs = msgs
	w.id, w.r = l.b.pub.send(l.ctx, msgs)
	return isb.Deferred(w, -1), nil
}

// write is one Append in flight: its messages (kept for retries) and its
// first round of publishes.
type write[T any] struct {
	l    *log[T]
	sc   *scratch
	msgs []*nats.Msg
	id   uint64
	r    *round
}

// Complete waits for the write's acknowledgements, retrying as the
// package doc says, and returns the highest sequence stored as an offset.
// It ends with isb.ErrClosed once the topic seals the log, and with ctx.
func (w *write[T]) Complete(ctx context.Context, _ int64) (int64, error) {
	defer scratches.Put(w.sc)
	l := w.l
	end, err := l.complete(ctx, w)
	if err != nil {
		return -1, err
	}
	l.raiseTail(end)
	// Announce the new tail to the other processes' topics (core NATS: no
	// round trip, and a lost announcement only delays their wake-up to
	// the next refresh), with the frames stored and their counts for
	// their usage (see onAnnounce).
	l.b.nc.Publish(l.b.names.announce(l.p), w.sc.announce)
	return end - 1, nil // the offset of the last item
}

// scratch is an append's messages, kept for the next append once its
// write completed: nothing refers to them then (a publish copies a message
// into the connection's buffer before it returns).
type scratch struct {
	buf  []byte
	ends []int
	msgs []nats.Msg
	ptrs []*nats.Msg
	// Packed: the items of the frame being cut, and each message's count
	// of items (nil when unpacked: one each).
	items  []byte
	counts []int
	// announce is the announcement of the completed write (onAnnounce).
	announce []byte
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// encode turns items into messages sharing one payload buffer of sc.
func (l *log[T]) encode(sc *scratch, items []T) ([]*nats.Msg, error) {
	n := len(items)
	buf := sc.buf[:0]
	ends := slices.Grow(sc.ends[:0], n)[:n]
	for i, it := range items {
		var err error
		if buf, err = l.b.cfg.codec.Append(buf, it); err != nil {
			return nil, &StreamError{Stream: l.stream, Op: "append", Err: fmt.Errorf("item %d of the batch: %w", i, err)}
		}
		ends[i] = len(buf)
	}
	sc.buf, sc.ends = buf, ends
	sc.counts = sc.counts[:0]
	return l.messages(sc, n), nil
}

// messages makes the n messages of sc, whose payloads are sc.buf cut at
// sc.ends, each with its own message id.
func (l *log[T]) messages(sc *scratch, n int) []*nats.Msg {
	if cap(sc.msgs) < n {
		sc.msgs = make([]nats.Msg, n)
		sc.ptrs = make([]*nats.Msg, n)
	}
	msgs, ptrs := sc.msgs[:n], sc.ptrs[:n]
	prefix := l.b.id + "." + strconv.Itoa(l.p) + "."
	first := l.seq.Add(uint64(n)) - uint64(n)
	start := 0
	for i := range n {
		m := &msgs[i]
		id := prefix + strconv.FormatUint(first+uint64(i), 10)
		if v := m.Header[natsjs.MsgIDHeader]; len(v) == 1 {
			v[0] = id
		} else {
			m.Header = nats.Header{natsjs.MsgIDHeader: []string{id}}
		}
		end := sc.ends[i]
		m.Subject, m.Data = l.stream, sc.buf[start:end:end]
		ptrs[i] = m
		start = end
	}
	return ptrs
}

// encodeFrames cuts items into frames (at FrameItems items and FrameBytes
// bytes) and makes a message of each.
func (l *log[T]) encodeFrames(sc *scratch, items []T) ([]*nats.Msg, error) {
	cfg := &l.b.cfg
	buf, ends, counts := sc.buf[:0], sc.ends[:0], sc.counts[:0]
	payload := sc.items[:0] // the encoded items of the frame being cut
	var lens []int          // their ends in payload
	lensBytes := 0          // the size of their lengths as uvarints
	cut := func() {
		buf = appendFrame(buf, payload, lens)
		ends, counts = append(ends, len(buf)), append(counts, len(lens))
	}
	for i, it := range items {
		before := len(payload)
		var err error
		if payload, err = cfg.codec.Append(payload, it); err != nil {
			return nil, &StreamError{Stream: l.stream, Op: "append", Err: fmt.Errorf("item %d of the batch: %w", i, err)}
		}
		size := len(payload) - before
		if len(lens) > 0 && (len(lens) == cfg.frameItems ||
			frameSize(len(payload), lensBytes+uvarintLen(uint64(size)), len(lens)+1) > cfg.frameBytes) {
			// Item i opens the next frame.
			payload = payload[:before]
			cut()
			payload = append(payload[:0], payload[before:before+size]...)
			lens, lensBytes = lens[:0], 0
		}
		lens = append(lens, len(payload))
		lensBytes += uvarintLen(uint64(size))
	}
	cut()
	sc.buf, sc.ends, sc.counts, sc.items = buf, ends, counts, payload
	return l.messages(sc, len(ends)), nil
}

// complete waits for w's first round and sends what failed again until
// every message is stored, as the package doc says, and returns the end
// of the highest message stored (the offset after its last item). It
// records what a packed stream's usage needs (each frame's count) and
// prepares the write's announcement.
func (l *log[T]) complete(ctx context.Context, w *write[T]) (int64, error) {
	deadline := time.Now().Add(l.b.cfg.retryTimeout)
	var end int64
	stored := 0
	pending := w.msgs
	index := make([]int, len(pending)) // pending[k] is w.msgs[index[k]]
	for k := range index {
		index[k] = k
	}
	counts := w.sc.counts
	packed := len(counts) > 0
	ann := w.sc.announce[:0]
	id, r := w.id, w.r
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		res, err := l.b.pub.await(l.ctx, id, r, l.b.cfg.ackTimeout)
		if err != nil {
			return 0, isb.ErrClosed // sealed: the topic is closing
		}
		var failed []*nats.Msg
		var failedIndex []int
		var lastErr error
		allFull := true
		for k, r := range res {
			if r.err == nil {
				n := 1
				if packed {
					n = counts[index[k]]
					l.frames.learn(r.seq, n)
					ann = append(strconv.AppendUint(append(ann, ' '), r.seq, 10), ' ')
					ann = strconv.AppendInt(ann, int64(n), 10)
				}
				end = max(end, join(r.seq, n, l.shift))
				stored++
				continue
			}
			failed, failedIndex, lastErr = append(failed, pending[k]), append(failedIndex, index[k]), r.err
			allFull = allFull && storageFull(r.err)
		}
		if len(failed) == 0 {
			// The announcement: the new tail, then each frame stored and
			// its count.
			w.sc.announce = append(strconv.AppendInt(ann[:0:0], end, 10), ann...)
			return end, nil
		}
		l.b.cfg.failed("publish", lastErr)
		if errors.Is(lastErr, nats.ErrNoResponders) && l.checkDeleted() {
			return 0, l.deletedErr("append")
		}
		switch {
		case allFull && stored == 0:
			// The stream's own limit, before anything of the batch was
			// stored: full, as the usage check would have said.
			return 0, &StreamError{Stream: l.stream, Op: "append", Kind: isb.ErrFull, Err: lastErr}
		case !allFull && !transient(lastErr):
			return 0, streamErr(l.stream, "append", lastErr)
		case time.Now().After(deadline):
			return 0, &StreamError{Stream: l.stream, Op: "append", Kind: ErrUnreachable,
				Err: fmt.Errorf("%d of %d messages not acknowledged after %v: %w", len(failed), len(w.msgs), l.b.cfg.retryTimeout, lastErr)}
		}
		// Part of the batch is stored: the rest is retried, also at the
		// stream's limit (waiting for room), so that nothing of the batch is
		// left half-stored without an error.
		l.b.cfg.log.Warn("jetstream: retrying publishes", zap.String("stream", l.stream),
			zap.Int("messages", len(failed)), zap.Error(lastErr))
		select {
		case <-time.After(wait):
		case <-l.ctx.Done():
			return 0, isb.ErrClosed
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		pending, index = failed, failedIndex
		id, r = l.b.pub.send(l.ctx, pending)
	}
}

// checkDeleted asks the server whether the stream still exists, marking
// it deleted when it does not. An error other than "not found" says
// nothing: the server may be restarting.
func (l *log[T]) checkDeleted() bool {
	if l.deleted.Load() {
		return true
	}
	ctx, cancel := context.WithTimeout(l.ctx, l.b.cfg.requestTimeout)
	defer cancel()
	_, err := l.b.js.Stream(ctx, l.stream)
	if errors.Is(err, natsjs.ErrStreamNotFound) {
		l.markDeleted()
		return true
	}
	return false
}
