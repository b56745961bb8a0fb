package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/isb"
)

// Read returns up to max items from offset with one batched direct get
// (see direct.go), decoding into buf. A message that does not decode is a
// *DecodeError (matching isb.ErrCorrupt) when it is the first asked for,
// and ends the batch before it otherwise. A message missing inside the
// retained range (deleted by hand) is a *StreamError of kind ErrGap,
// which also matches isb.ErrCorrupt: the consumer steps past it with Skip.
// Transient failures are retried until RetryTimeout, the log is sealed or
// ctx ends (the consumer's, which ends when it closes).
func (l *log[T]) Read(ctx context.Context, offset int64, max int, buf []T) ([]T, error) {
	if max < 1 {
		return nil, fmt.Errorf("jetstream: read of %d items: must be at least 1", max)
	}
	if h, t := l.Head(), l.Tail(); offset < h || offset >= t {
		return nil, &StreamError{Stream: l.stream, Op: "read", Kind: isb.ErrOutOfRange,
			Err: fmt.Errorf("offset %d outside [%d, %d)", offset, h, t)}
	}
	if l.deleted.Load() {
		return nil, l.deletedErr("read")
	}
	seq := uint64(offset) + 1
	var end batchEnd
	parent, stop := bound(ctx, l.ctx)
	defer stop()
	err := l.request(parent, "read", func(ctx context.Context) error {
		var err error
		end, err = l.fetch(ctx, seq, max, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	if end.last != seq+uint64(len(end.msgs))-1 {
		// Not contiguous from seq: find where the gap is.
		if err := l.request(parent, "read", func(ctx context.Context) error {
			var err error
			end, err = l.fetch(ctx, seq, max, true)
			return err
		}); err != nil {
			return nil, err
		}
		msgs, err := l.contiguous(offset, end.msgs)
		if err != nil {
			return nil, err
		}
		end.msgs = msgs
	}
	return l.decode(offset, end.msgs, buf)
}

// errNotYet is a direct get that found nothing at a sequence the tail says
// is stored: a replica that has not applied it yet answered. It is retried.
var errNotYet = errors.New("jetstream: message not yet readable")

// fetch runs one batched direct get and learns the tail from its end.
func (l *log[T]) fetch(ctx context.Context, seq uint64, n int, headers bool) (batchEnd, error) {
	end, err := l.b.direct.get(ctx, l.stream, seq, n, headers)
	if err != nil {
		return end, err
	}
	switch end.status {
	case "204":
	case "404":
		if l.refreshHead(ctx) && int64(seq)-1 < l.Head() {
			return end, &StreamError{Stream: l.stream, Op: "read", Kind: isb.ErrOutOfRange,
				Err: fmt.Errorf("offset %d was deleted (the stream now starts at %d)", seq-1, l.Head())}
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
	// the tail either way.
	l.raiseTail(max(int64(end.last), int64(seq-1+end.pending)))
	return end, nil
}

// refreshHead reads the stream's state; it reports whether it could.
func (l *log[T]) refreshHead(ctx context.Context) bool {
	s, err := l.b.js.Stream(ctx, l.stream)
	if err != nil {
		return false
	}
	l.observe(s.CachedInfo().State)
	return true
}

// contiguous returns the messages of msgs (read with headers from
// offset) up to the first missing sequence, or the gap error when offset
// itself is missing.
func (l *log[T]) contiguous(offset int64, msgs []*nats.Msg) ([]*nats.Msg, error) {
	want := uint64(offset) + 1
	for i, m := range msgs {
		seq, err := strconv.ParseUint(m.Header.Get("Nats-Sequence"), 10, 64)
		if err != nil {
			return nil, &StreamError{Stream: l.stream, Op: "read", Err: fmt.Errorf("direct get without a sequence: %w", err)}
		}
		if seq != want {
			if i > 0 {
				return msgs[:i], nil
			}
			l.b.cfg.log.Warn("jetstream: message missing", zap.String("stream", l.stream), zap.Int64("offset", offset))
			return nil, &StreamError{Stream: l.stream, Op: "read", Kind: ErrGap,
				Err: fmt.Errorf("offset %d is missing (the next stored is %d)", offset, int64(seq)-1)}
		}
		want++
	}
	return msgs, nil
}

// decode decodes msgs, read from offset, into buf.
func (l *log[T]) decode(offset int64, msgs []*nats.Msg, buf []T) ([]T, error) {
	c := l.b.cfg.codec
	for i, m := range msgs {
		if err := c.Decode(m.Data, &buf[i]); err != nil {
			if i > 0 {
				return buf[:i], nil
			}
			l.b.cfg.log.Warn("jetstream: message does not decode", zap.String("stream", l.stream), zap.Int64("offset", offset), zap.Error(err))
			return nil, &DecodeError{Stream: l.stream, Offset: offset + int64(i), Err: err}
		}
	}
	return buf[:len(msgs)], nil
}
