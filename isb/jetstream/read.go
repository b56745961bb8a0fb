package jetstream

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/isb"
)

// Read returns up to max items from offset, decoding into buf, and the
// offset of the first. The messages come from one batched direct get (see
// direct.go), whose messages past what the read returns are kept for the
// next read (readAhead). A message that does not decode is a *DecodeError
// (matching isb.ErrCorrupt) when it is the first asked for, and ends the
// batch before it otherwise. A message missing inside the retained range
// (deleted by hand) is a *StreamError of kind ErrGap, which also matches
// isb.ErrCorrupt: the consumer steps past it with Skip. Transient failures
// are retried until RetryTimeout, the log is sealed or ctx ends (the
// consumer's, which ends when it closes).
//
// On a packed stream a read returns items of one frame, from the index
// offset names: the offsets after a frame's last item hold nothing, so a
// read at one of them (the end of the frame, where the previous batch
// ended) moves to the next message and returns its items from its first
// offset. A frame that does not decode holds one offset, its first: the
// error is reported there, and after Skip the read moves on to the next
// message; so is a missing message. An item of a good frame that the
// codec refuses is reported at its own offset, as on an unpacked stream.
func (l *log[T]) Read(ctx context.Context, offset int64, max int, buf []T) (int64, []T, error) {
	if max < 1 {
		return offset, nil, fmt.Errorf("jetstream: read of %d items: must be at least 1", max)
	}
	if h, t := l.Head(), l.Tail(); offset < h || offset >= t {
		return offset, nil, &StreamError{Stream: l.stream, Op: "read", Kind: isb.ErrOutOfRange,
			Err: fmt.Errorf("offset %d outside [%d, %d)", offset, h, t)}
	}
	if l.deleted.Load() {
		return offset, nil, l.deletedErr("read")
	}
	parent, stop := bound(ctx, l.ctx)
	defer stop()
	packed := l.b.cfg.packed()
	f := frames.Get().(*frame)
	defer frames.Put(f)
	c := l.b.cfg.codec
	seq, idx := split(offset, l.shift)
	first, n := offset, 0
	for n < max {
		// The first message may cost a fetch; the next ones are read only
		// when the fetch brought them (no round trip for a batch).
		at, data, err := l.message(parent, seq, max-n, n == 0)
		switch {
		case n > 0 && (err != nil || at != seq):
			return first, buf[:n], nil
		case err != nil:
			return offset, nil, err
		case at != seq && idx > 0:
			// A missing message stepped past with Skip: on to the next.
			seq, idx, first = seq+1, 0, join(seq+1, 0, l.shift)
			continue
		case at != seq:
			l.b.cfg.log.Warn("jetstream: message missing", zap.String("stream", l.stream), zap.Int64("offset", first))
			return offset, nil, &StreamError{Stream: l.stream, Op: "read", Kind: ErrGap, Offset: first,
				Err: fmt.Errorf("offset %d is missing (the next stored is %d)", first, join(at, 0, l.shift))}
		}
		count := 1
		if packed {
			if err := parseFrame(data, f); err != nil {
				l.raiseTail(join(seq, 1, l.shift)) // a damaged frame holds one offset
				if idx > 0 {
					seq, idx, first = seq+1, 0, join(seq+1, 0, l.shift)
					continue
				}
				l.b.cfg.log.Warn("jetstream: frame does not decode", zap.String("stream", l.stream), zap.Int64("offset", first), zap.Error(err))
				return offset, nil, &DecodeError{Stream: l.stream, Offset: first, Err: err}
			}
			count = f.count()
			l.frames.learn(seq, count)
			l.raiseTail(join(seq, count, l.shift))
		}
		if idx >= count {
			// The end of the frame (or past it, after a Skip): the next
			// message holds the next items.
			seq, idx, first = seq+1, 0, join(seq+1, 0, l.shift)
			continue
		}
		for ; idx < count && n < max; idx++ {
			item := data
			if packed {
				item = f.item(idx)
			}
			if err := c.Decode(item, &buf[n]); err != nil {
				if n > 0 {
					return first, buf[:n], nil
				}
				at := join(seq, idx, l.shift)
				l.b.cfg.log.Warn("jetstream: message does not decode", zap.String("stream", l.stream), zap.Int64("offset", at), zap.Error(err))
				return offset, nil, &DecodeError{Stream: l.stream, Offset: at, Err: err}
			}
			n++
		}
		if count < 1<<l.shift {
			// The next frame's items are not at the offsets after these.
			break
		}
		seq, idx = seq+1, 0
		if join(seq, 0, l.shift) >= l.Tail() {
			break
		}
	}
	return first, buf[:n], nil
}

// frames are the parsed frames of reads in flight.
var frames = sync.Pool{New: func() any { return new(frame) }}

// readAheadBytes bounds what one fetch of a packed stream brings (the
// direct get's max_bytes): frames hold many items, so a fetch of as many
// messages as a read asks for items could bring far more than it needs.
const readAheadBytes = 1 << 20

// readAhead keeps the messages of the last fetch of a log: a read returns
// one frame of a packed stream (or a batch of an unpacked one), and the
// next read, at the next sequence, finds its message here instead of
// asking the server again. Messages never change once stored, so what is
// kept stays right; readers at other positions only replace it.
type readAhead struct {
	mu   sync.Mutex
	seqs []uint64 // ascending, of the messages below
	msgs [][]byte
}

// get returns the first message at or after seq that the last fetch
// brought, and its sequence, when seq lies within that fetch.
func (a *readAhead) get(seq uint64) (at uint64, data []byte, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := len(a.seqs)
	if n == 0 || seq < a.seqs[0] || seq > a.seqs[n-1] {
		return 0, nil, false
	}
	i := int(seq - a.seqs[0])
	if i >= n || a.seqs[i] != seq { // the fetch stepped over a missing message
		i = sort.Search(n, func(k int) bool { return a.seqs[k] >= seq })
	}
	return a.seqs[i], a.msgs[i], true
}

func (a *readAhead) put(seqs []uint64, msgs [][]byte) {
	a.mu.Lock()
	a.seqs, a.msgs = seqs, msgs
	a.mu.Unlock()
}

// message returns the first stored message at or after seq, and its
// sequence: seq itself unless it is missing. It fetches up to want
// messages from seq when the last fetch did not bring seq and fetch
// allows it (errNotAhead otherwise).
func (l *log[T]) message(ctx context.Context, seq uint64, want int, fetch bool) (uint64, []byte, error) {
	if at, data, ok := l.ahead.get(seq); ok {
		return at, data, nil
	}
	if !fetch {
		return 0, nil, errNotAhead
	}
	var end batchEnd
	err := l.request(ctx, "read", func(ctx context.Context) error {
		var err error
		end, err = l.fetch(ctx, seq, want, false)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	seqs := make([]uint64, len(end.msgs))
	if end.last == seq+uint64(len(end.msgs))-1 {
		for i := range seqs {
			seqs[i] = seq + uint64(i)
		}
	} else {
		// Not contiguous from seq: read again with headers to learn each
		// message's sequence.
		if err := l.request(ctx, "read", func(ctx context.Context) error {
			var err error
			end, err = l.fetch(ctx, seq, want, true)
			return err
		}); err != nil {
			return 0, nil, err
		}
		seqs = seqs[:0]
		for _, m := range end.msgs {
			s, err := strconv.ParseUint(m.Header.Get("Nats-Sequence"), 10, 64)
			if err != nil || (len(seqs) > 0 && s <= seqs[len(seqs)-1]) {
				return 0, nil, &StreamError{Stream: l.stream, Op: "read", Err: fmt.Errorf("direct get without a sequence: %q", m.Header.Get("Nats-Sequence"))}
			}
			seqs = append(seqs, s)
		}
	}
	msgs := make([][]byte, len(end.msgs))
	for i, m := range end.msgs {
		msgs[i] = m.Data
	}
	l.ahead.put(seqs, msgs)
	return seqs[0], msgs[0], nil
}

// errNotAhead: the message is not among those the last fetch brought.
var errNotAhead = errors.New("jetstream: message not read ahead")

// lastCount returns how many items the frame at seq (a packed stream's
// last sequence) holds: 1 when it does not decode (it holds one offset),
// and 0 when it cannot tell (the message is gone, or a replica behind
// answered), in which case a later read or refresh learns it.
func (l *log[T]) lastCount(ctx context.Context, seq uint64) (int, error) {
	end, err := l.b.direct.get(ctx, l.stream, seq, 1, false, 0)
	if err != nil {
		return 0, err
	}
	if end.status != "204" || len(end.msgs) != 1 || end.last != seq {
		return 0, nil
	}
	var f frame
	if parseFrame(end.msgs[0].Data, &f) != nil {
		return 1, nil
	}
	l.frames.learn(seq, f.count())
	return f.count(), nil
}

// errNotYet is a direct get that found nothing at a sequence the tail says
// is stored: a replica that has not applied it yet answered. It is retried.
var errNotYet = errors.New("jetstream: message not yet readable")

// fetch runs one batched direct get and learns the tail from its end.
func (l *log[T]) fetch(ctx context.Context, seq uint64, n int, headers bool) (batchEnd, error) {
	maxBytes := 0
	if l.b.cfg.packed() {
		maxBytes = readAheadBytes
	}
	end, err := l.b.direct.get(ctx, l.stream, seq, n, headers, maxBytes)
	if err != nil {
		return end, err
	}
	switch end.status {
	case "204":
	case "404":
		if l.refreshHead(ctx) && join(seq, 0, l.shift) < l.Head() {
			return end, &StreamError{Stream: l.stream, Op: "read", Kind: isb.ErrOutOfRange,
				Err: fmt.Errorf("offset %d was deleted (the stream now starts at %d)", join(seq, 0, l.shift), l.Head())}
		}
		return end, errNotYet
	case "503":
		if l.checkDeleted() {
			return end, l.deletedErr("read")
		}
		return end, nats.ErrNoResponders
	default:
		return end, fmt.Errorf("jetstream: direct get answered status %s", end.status)
	}
	if len(end.msgs) == 0 {
		return end, errNotYet
	}
	// The end's count of pending messages is, without headers, the count
	// from seq when the batch began (nats-server 2.15 decrements it per
	// message only with headers, and counts after the last message only
	// when the stream moved meanwhile): seq-1+pending is a lower bound of
	// the tail either way. (A packed stream's tail is the end of a frame:
	// Read raises it from the frames it parses.)
	if !l.b.cfg.packed() {
		l.raiseTail(max(int64(end.last), int64(seq-1+end.pending)))
	}
	return end, nil
}

// refreshHead reads the stream's state; it reports whether it could.
func (l *log[T]) refreshHead(ctx context.Context) bool {
	s, err := l.b.js.Stream(ctx, l.stream)
	if err != nil {
		return false
	}
	return l.observe(ctx, s.CachedInfo().State) == nil
}
