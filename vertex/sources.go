package vertex

import (
	"context"
	"io"
	"iter"
	"strconv"
	"sync"
	"sync/atomic"
)

// channelSource is the [Source] returned by [FromChannel].
type channelSource[T any] struct {
	ch  <-chan T
	seq atomic.Int64
}

// FromChannel returns a source of the values received from ch, with IDs
// "0", "1", ... in receive order; it ends (io.EOF) when ch is closed. A
// read waits for one value, then takes what is ready without waiting. A
// nil ch, which would block forever, fails validation.
func FromChannel[T any](ch <-chan T) Source[T] { return &channelSource[T]{ch: ch} }

// Validate reports a nil channel, which would block forever.
func (s *channelSource[T]) Validate() error {
	if s.ch == nil {
		return optionError("FromChannel", nil, "needs a non-nil channel")
	}
	return nil
}

// Read waits for one value, then takes what is ready without waiting, up to max.
func (s *channelSource[T]) Read(ctx context.Context, max int) ([]Message[T], error) {
	var first T
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case v, ok := <-s.ch:
		if !ok {
			return nil, io.EOF
		}
		first = v
	}
	vals := []T{first}
more:
	for len(vals) < max {
		select {
		case v, ok := <-s.ch:
			if !ok {
				break more // the next Read reports io.EOF
			}
			vals = append(vals, v)
		default:
			break more
		}
	}
	base := s.seq.Add(int64(len(vals))) - int64(len(vals))
	return wrap(vals, base), nil
}

// seqSource is the [Source] returned by [FromSeq].
type seqSource[T any] struct {
	mu   sync.Mutex
	seq  iter.Seq[T]
	next func() (T, bool)
	stop func()
	n    int64
	done bool
}

// FromSeq returns a source of the values of seq, with IDs "0", "1", ...
// Replicas take turns pulling from it. seq runs as a coroutine that ctx
// cannot interrupt, so it should not block for long. The source is an
// io.Closer, whose Close (which the pipeline calls) stops the sequence. A
// nil seq fails validation.
func FromSeq[T any](seq iter.Seq[T]) Source[T] { return &seqSource[T]{seq: seq} }

// Validate reports a nil sequence.
func (s *seqSource[T]) Validate() error {
	if s.seq == nil {
		return optionError("FromSeq", nil, "needs a non-nil iter.Seq")
	}
	return nil
}

// Read returns up to max values, io.EOF after the last.
func (s *seqSource[T]) Read(ctx context.Context, max int) ([]Message[T], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return nil, io.EOF
	}
	if s.next == nil {
		s.next, s.stop = iter.Pull(s.seq)
	}
	vals := make([]T, 0, min(max, 1024))
	for len(vals) < max {
		v, ok := s.next()
		if !ok {
			s.done = true
			break
		}
		vals = append(vals, v)
	}
	if len(vals) == 0 {
		return nil, io.EOF
	}
	base := s.n
	s.n += int64(len(vals))
	return wrap(vals, base), nil
}

// Close stops the sequence. It is idempotent.
func (s *seqSource[T]) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		s.stop()
	}
	s.done = true
	return nil
}

// sliceSource is the [Source] returned by [FromSlice] and [FromMessages].
type sliceSource[T any] struct {
	msgs []Message[T]
	next atomic.Int64
}

// FromSlice returns a source of values, with IDs "0", "1", ... (the index).
func FromSlice[T any](values []T) Source[T] {
	return &sliceSource[T]{msgs: wrap(values, 0)}
}

// FromMessages returns a source of msgs as given (IDs, keys, tags, event
// times and headers included).
func FromMessages[T any](msgs []Message[T]) Source[T] {
	return &sliceSource[T]{msgs: msgs}
}

// Read returns the next up to max messages, io.EOF after the last.
func (s *sliceSource[T]) Read(ctx context.Context, max int) ([]Message[T], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	end := s.next.Add(int64(max))
	start := end - int64(max)
	if start >= int64(len(s.msgs)) {
		return nil, io.EOF
	}
	end = min(end, int64(len(s.msgs)))
	// A copy: the pipeline stamps messages, and they are the caller's.
	return append([]Message[T](nil), s.msgs[start:end]...), nil
}

// wrap makes messages of vals with IDs base, base+1, ...
func wrap[T any](vals []T, base int64) []Message[T] {
	out := make([]Message[T], len(vals))
	for i, v := range vals {
		out[i] = Message[T]{ID: strconv.FormatInt(base+int64(i), 10), Value: v}
	}
	return out
}
