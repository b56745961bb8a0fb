package vertex

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/runnel-dev/runnel/isb"
)

// ErrUnknownAck is returned by TopicSource.Ack for messages it did not
// read, or acknowledged already.
var ErrUnknownAck = errors.New("vertex: ack of a message the source did not deliver")

// topicSourceConfig is what the topic source's With methods and
// EndWhenEmpty set.
type topicSourceConfig struct {
	endWhenEmpty bool
	poll         time.Duration
}

// TopicSource is the [Source] returned by [FromTopic].
type TopicSource[T any] struct {
	topic *isb.Topic[T]
	group string
	cfg   topicSourceConfig
	// eventTime and keys, when set (WithEventTime, WithKeys), give each
	// message its event time and keys from its item.
	eventTime func(T) time.Time
	keys      func(T) []string

	// mu is held for every use of c, which one goroutine at a time may
	// use, and guards the fields after it.
	mu       sync.Mutex
	c        *isb.PullConsumer[T]
	spans    map[int][]span // per partition: batches delivered, in offset order
	left     []Message[T]   // pulled, not yet handed on: offsets leftAt.. of leftPart
	leftPart int
	leftAt   int64
	ended    bool
	closed   bool
	openErr  error
}

// span is a delivered batch of one partition: offsets [start, end).
type span struct {
	start, end int64
	acked      bool
}

// FromTopic returns a source reading topic as consumer group group: a
// durable (isb/mmap) topic makes the pipeline's input replayable. The
// source commits the group's progress as the pipeline acknowledges what it
// read (once written to the first buffer: durable there on durable
// storage), so a pipeline stopped or killed resumes after the last commit
// and reads again what was delivered and not acknowledged.
//
// Message i of partition p gets the ID "p-i" (the same when read again
// after a restart) and the item as its value. Its event time is what
// WithEventTime extracts from the item, or else the time it is read; its
// keys are what WithKeys extracts, or else none. Give both for timestamped,
// keyed records: with the read time as event time, a topic read again
// after a restart or replayed faster than it was written is windowed by
// when it was read, not by when its events happened. Replicas of the source share one consumer; the topic is the
// caller's, and Close (which the pipeline calls) closes only the consumer.
// Each batch comes from one partition, and the source is a
// [PartitionedSource]: its watermark is kept per partition, the lowest
// being each replica's, so after a restart a partition
// whose commit is behind another's is not judged late on the other's
// watermark. A wrapper that changes the IDs must say itself which
// partition a batch came from.
//
// The source's With methods and EndWhenEmpty, chained after FromTopic,
// configure it; each returns the source and must be called before the
// pipeline runs:
//
//	src := vertex.FromTopic(topic, "views").WithEventTime(View.Time).WithKeys(View.PageKey)
func FromTopic[T any](topic *isb.Topic[T], group string) *TopicSource[T] {
	return &TopicSource[T]{topic: topic, group: group, cfg: topicSourceConfig{poll: 100 * time.Millisecond}, spans: map[int][]span{}}
}

// WithEventTime makes the event time of each message f(item), for a topic
// whose items carry their own time (a zero time falls back to the read
// time). f is typed by the topic's item: the compiler checks it against
// the topic, as it checks the types of connected vertices.
func (s *TopicSource[T]) WithEventTime(f func(item T) time.Time) *TopicSource[T] {
	s.eventTime = f
	return s
}

// WithKeys makes the keys of each message f(item), so that a reduce
// downstream groups by them without a FlatMap to set them (the slice is
// the message's: f must not change it afterwards).
func (s *TopicSource[T]) WithKeys(f func(item T) []string) *TopicSource[T] {
	s.keys = f
	return s
}

// WithPollInterval sets how long a read waits for items before it returns
// an empty batch (default 100ms): an idle read, which lets the source's
// watermark advance (see pipeline.Watermarks) and lets other replicas
// acknowledge.
func (s *TopicSource[T]) WithPollInterval(d time.Duration) *TopicSource[T] {
	s.cfg.poll = d
	return s
}

// EndWhenEmpty ends the source (io.EOF) at the first read that finds
// nothing to read in any partition: for a topic written before the
// pipeline starts. Without it the source waits for new items forever.
func (s *TopicSource[T]) EndWhenEmpty() *TopicSource[T] {
	s.cfg.endWhenEmpty = true
	return s
}

// Validate reports a nil topic, an empty group or a poll interval that is
// not positive.
func (s *TopicSource[T]) Validate() error {
	switch {
	case s.topic == nil:
		return optionError("FromTopic", nil, "needs a non-nil topic")
	case s.group == "":
		return optionError("FromTopic", s.group, "needs a consumer group name")
	case s.cfg.poll <= 0:
		return optionError("WithPollInterval", s.cfg.poll, "must be positive")
	}
	return nil
}

// Read returns up to max items of one partition, an empty batch when none
// came within the poll interval (WithPollInterval), or io.EOF
// (EndWhenEmpty).
func (s *TopicSource[T]) Read(ctx context.Context, max int) ([]Message[T], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.consumer(max); err != nil {
		return nil, err
	}
	if s.ended {
		return nil, io.EOF
	}
	if len(s.left) == 0 {
		if err := s.pull(ctx); err != nil || len(s.left) == 0 {
			return nil, err
		}
	}
	// A pull may bring more than max (if a caller lowers it): the rest is
	// handed on by the next reads, so spans stay contiguous.
	n := min(max, len(s.left))
	out := s.left[:n:n]
	s.left = s.left[n:]
	start := s.leftAt
	s.leftAt += int64(n)
	s.spans[s.leftPart] = append(s.spans[s.leftPart], span{start: start, end: s.leftAt})
	return out, nil
}

// pull waits up to the poll interval for a batch and turns it into
// messages in s.left.
func (s *TopicSource[T]) pull(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, s.cfg.poll)
	b, err := s.c.Pull(pctx)
	cancel()
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded):
			if s.cfg.endWhenEmpty {
				s.ended = true
				return io.EOF
			}
			return nil // an idle read
		}
		return fmt.Errorf("vertex: topic source %q: %w", s.topic.Name(), err)
	}
	msgs := make([]Message[T], len(b.Items))
	prefix := strconv.Itoa(b.Partition) + "-"
	now := time.Now()
	for i, v := range b.Items {
		m := Message[T]{ID: prefix + strconv.FormatInt(b.Offset+int64(i), 10), EventTime: now, Value: v}
		if s.eventTime != nil {
			if et := s.eventTime(v); !et.IsZero() {
				m.EventTime = et
			}
		}
		if s.keys != nil {
			m.Keys = s.keys(v)
		}
		msgs[i] = m
	}
	s.left, s.leftPart, s.leftAt = msgs, b.Partition, b.Offset
	return nil
}

// consumer creates the consumer at the first Read.
func (s *TopicSource[T]) consumer(batch int) error {
	switch {
	case s.closed:
		return fmt.Errorf("vertex: topic source %q: %w", s.topic.Name(), isb.ErrClosed)
	case s.openErr != nil:
		return s.openErr
	case s.c != nil:
		return nil
	}
	c, err := s.topic.PullConsumer(s.group, isb.ManualCommit(), isb.BatchSize(batch))
	if err != nil {
		s.openErr = fmt.Errorf("vertex: topic source %q group %q: %w", s.topic.Name(), s.group, err)
		return s.openErr
	}
	s.c = c
	return nil
}

// Ack marks the batch msgs (as Read returned it) done and commits every
// partition up to the first batch not yet acknowledged: replicas may ack
// out of order, the commit never passes a batch still in flight.
func (s *TopicSource[T]) Ack(_ context.Context, msgs []Message[T]) error {
	if len(msgs) == 0 {
		return nil
	}
	p, off, err := parseTopicID(msgs[0].ID)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	spans := s.spans[p]
	i := 0
	for i < len(spans) && spans[i].start != off {
		i++
	}
	if i == len(spans) || spans[i].acked || spans[i].end-spans[i].start != int64(len(msgs)) {
		return fmt.Errorf("%w: %d messages from %q", ErrUnknownAck, len(msgs), msgs[0].ID)
	}
	spans[i].acked = true
	done := 0
	for done < len(spans) && spans[done].acked {
		done++
	}
	if done == 0 {
		return nil
	}
	to := spans[done-1].end
	s.spans[p] = append(spans[:0], spans[done:]...)
	if s.c == nil || s.closed {
		return fmt.Errorf("vertex: topic source %q: %w", s.topic.Name(), isb.ErrClosed)
	}
	if err := s.c.CommitTo(p, to); err != nil {
		return fmt.Errorf("vertex: topic source %q: commit partition %d at %d: %w", s.topic.Name(), p, to, err)
	}
	return nil
}

// ReadPartitions is the topic's partition count: the source keeps a
// watermark per partition (see [PartitionedSource]).
func (s *TopicSource[T]) ReadPartitions() int {
	if s.topic == nil {
		return 1
	}
	return s.topic.Partitions()
}

// PartitionOf returns the topic partition the batch msgs (as Read returned
// it) came from, from the ID of its first message; 0 for an ID Read did not
// make.
func (s *TopicSource[T]) PartitionOf(msgs []Message[T]) int {
	if len(msgs) == 0 {
		return 0
	}
	p, _, err := parseTopicID(msgs[0].ID)
	if err != nil {
		return 0
	}
	return p
}

// parseTopicID splits an ID "p-i" made by Read.
func parseTopicID(id string) (int, int64, error) {
	ps, os, ok := strings.Cut(id, "-")
	p, err1 := strconv.Atoi(ps)
	off, err2 := strconv.ParseInt(os, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("%w: ID %q is not one the topic source made", ErrUnknownAck, id)
	}
	return p, off, nil
}

// Close closes the source's consumer (not the topic): what was delivered
// and not acknowledged is read again by the group's next consumer. It is
// idempotent.
func (s *TopicSource[T]) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.c == nil {
		return nil
	}
	return s.c.Close()
}
