package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/vertex"

	"github.com/runnel-dev/runnel/internal/ratelog"
)

// Source is a [vertex.Source] reading Kafka topics as a member of a
// consumer group; [NewSource] makes one, and the package doc says what it
// delivers. Its replicas (vertex.Replicas) share one client: the group
// member is the process, not the replica.
type Source struct {
	cfg sourceConfig
	cl  *kgo.Client
	// slots maps each topic to its first watermark slot and its partition
	// count when NewSource described it (see ReadPartitions).
	slots  map[string]slotRange
	nslots int

	// pollMu makes reads one at a time: a read takes from what the last
	// poll brought, or polls. It is never taken by Ack or the committer.
	pollMu sync.Mutex

	// mu guards the fields below; it is never held over a call to the
	// brokers.
	mu     sync.Mutex
	left   []chunk                       // polled, not yet handed on, in poll order
	parts  map[topicPartition]*partition // partitions assigned that delivered a batch
	ends   map[topicPartition]int64      // StopAtEnd: where each partition ends
	unread map[topicPartition]struct{}   // StopAtEnd: partitions not yet read to their end
	// endPoll cuts the poll in flight short, nil when none is.
	endPoll context.CancelFunc
	stale   int64 // messages acknowledged after their partition was revoked
	closed  bool

	// commitMu orders the commits: the committer's and the one a
	// revocation makes are never in flight together, so the offsets a
	// partition is committed at never go backwards.
	commitMu sync.Mutex
	commits  committer
	// groupErrs logs the errors of the client's group management, which
	// it retries by itself.
	groupErrs ratelog.Log
}

// slotRange is a topic's watermark slots: its partitions p map to
// first + p mod n.
type slotRange struct{ first, n int }

// chunk is records of one partition, as a poll returned them, in offset
// order.
type chunk struct {
	tp   topicPartition
	recs []*kgo.Record
}

// NewSource validates cfg, connects to the brokers, describes cfg.Topics
// (each must exist: ErrTopic otherwise) and joins cfg.Group. With
// StopAtEnd it also lists where each partition starts and ends and what
// the group committed, to tell when it has read everything. An invalid
// field of cfg is an *OptionError naming it (errors.Is(err,
// pipeline.ErrInvalidOption)).
//
// The source holds a client and a goroutine (the committer) from then
// on: Close releases them, and the pipeline calls Close when it stops.
func NewSource(ctx context.Context, cfg SourceConfig) (*Source, error) {
	c, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	s := &Source{cfg: c, parts: map[topicPartition]*partition{}}
	s.groupErrs = ratelog.Log{Log: c.Logger, Msg: "kafka source: group management failed; the client retries"}
	reset := kgo.NewOffset().AtStart()
	if c.Start == FromLatest {
		reset = kgo.NewOffset().AtEnd()
	}
	opts := append(append([]kgo.Opt(nil), c.ClientOptions...),
		kgo.SeedBrokers(c.Brokers...),
		kgo.ConsumerGroup(c.Group),
		kgo.ConsumeTopics(c.Topics...),
		kgo.ConsumeResetOffset(reset),
		kgo.DisableAutoCommit(),
		// Polls and rebalances exclude each other, so that what a poll
		// brought is in s.left before a revocation filters it (see
		// release).
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsRevoked(s.revoked),
		kgo.OnPartitionsLost(s.lost),
		kgo.OnPartitionsCallbackBlocked(s.hurry),
	)
	if s.cl, err = kgo.NewClient(opts...); err != nil {
		return nil, fmt.Errorf("kafka: source of group %q: %w", c.Group, err)
	}
	if err := s.describe(ctx); err != nil {
		s.cl.Close()
		return nil, err
	}
	s.commits.start(s)
	return s, nil
}

// describe reads the partition counts of the topics and, with StopAtEnd,
// where the group is to read each partition up to.
func (s *Source) describe(ctx context.Context) error {
	adm := kadm.NewClient(s.cl)
	details, err := adm.ListTopics(ctx, s.cfg.Topics...)
	if err != nil {
		return fmt.Errorf("kafka: source of group %q: describe topics: %w", s.cfg.Group, err)
	}
	s.slots = make(map[string]slotRange, len(s.cfg.Topics))
	for _, t := range s.cfg.Topics {
		d, ok := details[t]
		switch {
		case !ok:
			return fmt.Errorf("%w: %q: not in the brokers' metadata", ErrTopic, t)
		case d.Err != nil:
			return fmt.Errorf("%w: %q: %w", ErrTopic, t, d.Err)
		case len(d.Partitions) == 0:
			return fmt.Errorf("%w: %q: no partitions", ErrTopic, t)
		}
		s.slots[t] = slotRange{first: s.nslots, n: len(d.Partitions)}
		s.nslots += len(d.Partitions)
	}
	if !s.cfg.StopAtEnd {
		return nil
	}
	return s.listEnds(ctx, adm)
}

// listEnds records, for StopAtEnd, each partition's end offset and which
// partitions are still to be read up to it: those whose position (the
// group's commit, or else the start the reset offset gives) is before it.
func (s *Source) listEnds(ctx context.Context, adm *kadm.Client) error {
	starts, err := adm.ListStartOffsets(ctx, s.cfg.Topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return fmt.Errorf("kafka: source of group %q: list start offsets: %w", s.cfg.Group, err)
	}
	ends, err := adm.ListEndOffsets(ctx, s.cfg.Topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("kafka: source of group %q: list end offsets: %w", s.cfg.Group, err)
	}
	committed, err := adm.FetchOffsets(ctx, s.cfg.Group)
	if err == nil {
		err = committed.Error()
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		err = nil // a group that never committed (Kafka answers no offsets, kfake this)
	}
	if err != nil {
		return fmt.Errorf("kafka: source of group %q: fetch its offsets: %w", s.cfg.Group, err)
	}
	s.ends, s.unread = map[topicPartition]int64{}, map[topicPartition]struct{}{}
	ends.Each(func(e kadm.ListedOffset) {
		tp := topicPartition{e.Topic, e.Partition}
		s.ends[tp] = e.Offset
		pos := e.Offset // FromLatest
		if s.cfg.Start == FromEarliest {
			if st, ok := starts.Lookup(e.Topic, e.Partition); ok {
				pos = st.Offset
			}
		}
		if c, ok := committed.Lookup(e.Topic, e.Partition); ok && c.At >= 0 {
			pos = c.At
		}
		if pos < e.Offset {
			s.unread[tp] = struct{}{}
		}
	})
	return nil
}

// ReadPartitions is the number of partitions the topics had when
// NewSource described them, over all topics: the pipeline keeps a
// watermark per partition (see [vertex.PartitionedSource]), so that after
// a restart a partition whose commit is behind the others is not judged
// late on their watermark. A partition added to a topic afterwards shares
// the slot of partition p mod n of its topic (n partitions when
// described): its messages may be judged on that partition's watermark
// until the pipeline is started again.
func (s *Source) ReadPartitions() int { return s.nslots }

// PartitionOf returns the watermark slot of the partition the batch msgs
// (as Read returned it) came from; 0 for an ID the source did not make.
func (s *Source) PartitionOf(msgs []vertex.Message[[]byte]) int {
	if len(msgs) == 0 {
		return 0
	}
	topic, p, _, ok := parseID(msgs[0].ID)
	if !ok {
		return 0
	}
	return s.slot(topic, p)
}

// slot is the watermark slot of partition p of topic.
func (s *Source) slot(topic string, p int32) int {
	r, ok := s.slots[topic]
	if !ok {
		return 0
	}
	return r.first + int(p)%r.n
}

// Read returns up to max records of one partition as messages, an empty
// batch when none came within the poll interval, or io.EOF (StopAtEnd,
// once everything is read).
func (s *Source) Read(ctx context.Context, max int) ([]vertex.Message[[]byte], error) {
	recs, err := s.next(ctx, max)
	if len(recs) == 0 {
		return nil, err
	}
	msgs := make([]vertex.Message[[]byte], len(recs))
	for i, r := range recs {
		toMessage(r, &msgs[i])
	}
	return msgs, err
}

// ReadInto is Read into buf, which it fills with up to len(buf) messages
// (see [vertex.BufferedSource]).
func (s *Source) ReadInto(ctx context.Context, buf []vertex.Message[[]byte]) (int, error) {
	recs, err := s.next(ctx, len(buf))
	for i, r := range recs {
		toMessage(r, &buf[i])
	}
	return len(recs), err
}

// next returns the next batch: up to max records of one partition,
// registered as delivered. It polls when nothing polled is left.
func (s *Source) next(ctx context.Context, max int) ([]*kgo.Record, error) {
	if max <= 0 {
		return nil, nil
	}
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	if recs, err, ok := s.take(max); ok {
		return recs, err
	}
	if err := s.poll(ctx, max); err != nil {
		return nil, err
	}
	recs, err, _ := s.take(max)
	return recs, err
}

// take hands on up to max records of the first polled partition, or
// io.EOF once StopAtEnd's partitions are all read; ok is false when there
// is nothing to hand on and the source has not ended.
func (s *Source) take(max int) (recs []*kgo.Record, err error, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed, true
	}
	for len(s.left) > 0 {
		c := &s.left[0]
		recs = s.cutAtEnd(c.tp, c.recs)
		if len(recs) == 0 {
			s.left = s.left[1:]
			continue
		}
		if len(recs) > max {
			recs = recs[:max]
		}
		if c.recs = c.recs[len(recs):]; len(c.recs) == 0 {
			s.left = s.left[1:]
		}
		pt := s.parts[c.tp]
		if pt == nil {
			pt = newPartition()
			s.parts[c.tp] = pt
		}
		pt.deliver(recs)
		if s.unread != nil && recs[len(recs)-1].Offset+1 >= s.ends[c.tp] {
			delete(s.unread, c.tp)
		}
		return recs, nil, true
	}
	if s.unread != nil && len(s.unread) == 0 {
		return nil, io.EOF, true
	}
	return nil, nil, false
}

// cutAtEnd drops, with StopAtEnd, the records of tp at or past where it
// ended when NewSource listed it: they are never delivered (nor
// committed), so the group's next run reads them.
func (s *Source) cutAtEnd(tp topicPartition, recs []*kgo.Record) []*kgo.Record {
	if s.ends == nil {
		return recs
	}
	end, ok := s.ends[tp]
	if !ok {
		return nil // a partition added since: not this run's
	}
	n := 0
	for n < len(recs) && recs[n].Offset < end {
		n++
	}
	return recs[:n]
}

// poll waits up to the poll interval for records and appends them to
// s.left, a chunk per partition. Rebalances wait while it runs (the
// client's BlockRebalanceOnPoll): a revocation finds in s.left whatever
// the poll brought of its partitions.
func (s *Source) poll(ctx context.Context, max int) error {
	pctx, cancel := context.WithTimeout(ctx, s.cfg.PollInterval)
	s.mu.Lock()
	s.endPoll = cancel
	s.mu.Unlock()
	fs := s.cl.PollRecords(pctx, max)
	cancel()
	s.mu.Lock()
	s.endPoll = nil
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) > 0 {
			s.left = append(s.left, chunk{tp: topicPartition{p.Topic, p.Partition}, recs: p.Records})
		}
	})
	got := len(s.left) > 0
	s.mu.Unlock()
	s.cl.AllowRebalance()
	if got {
		return nil // an error comes back at the next poll that brings nothing
	}
	for _, fe := range fs.Errors() {
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled):
			// The poll interval passed: an idle read.
		case errors.Is(fe.Err, kgo.ErrClientClosed):
			return ErrClosed
		case fe.Topic == "":
			// Not a partition's: the client tells of a failed join,
			// sync or heartbeat (a member that died holds a rebalance up
			// until its session ends), and goes on rejoining by itself.
			s.groupErrs.Failure(fe.Err, zap.String("group", s.cfg.Group))
		default:
			return fmt.Errorf("%w: topic %q partition %d: %w", ErrFetch, fe.Topic, fe.Partition, fe.Err)
		}
	}
	return nil
}

// DefaultRetry is vertex.RemoteRetry: a source vertex on it retries a
// failed Read (ErrFetch) until the pipeline stops, unless its options set
// a policy (vertex.Retry), which wins (see [vertex.RetryDefaulter]).
// Failures of the group's management (a join, a heartbeat) are no Read
// errors: franz-go retries them itself, and the source logs them at most
// once a second.
func (s *Source) DefaultRetry() vertex.RetryPolicy { return vertex.RemoteRetry }

// hurry is the client's OnPartitionsCallbackBlocked: a rebalance waits
// for the poll in flight, which would otherwise wait out the poll interval
// when no records come (as while the member first joins the group: every
// run waited 100-250ms for its first records).
func (s *Source) hurry(context.Context, *kgo.Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.endPoll != nil {
		s.endPoll()
	}
}

// Ack records that the batch msgs, as Read returned it, is written
// downstream; the committer commits each partition up to the first batch
// not yet acknowledged. Batches of a partition revoked since they were
// read are ignored (Stale counts them): the partition's new owner reads
// them again. An ID the source did not make is ErrUnknownAck.
func (s *Source) Ack(_ context.Context, msgs []vertex.Message[[]byte]) error {
	if len(msgs) == 0 {
		return nil
	}
	topic, p, off, ok := parseID(msgs[0].ID)
	if !ok {
		return fmt.Errorf("%w: ID %q", ErrUnknownAck, msgs[0].ID)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	var held, grew bool
	if pt := s.parts[topicPartition{topic, p}]; pt != nil {
		held, grew = pt.ack(off, len(msgs))
	}
	if !held {
		s.stale += int64(len(msgs))
	}
	s.mu.Unlock()
	if grew {
		s.commits.wake()
	}
	return nil
}

// Stale returns how many acknowledged messages the source ignored because
// their partition had been revoked (or lost) since they were read: each
// is read again by the partition's next owner, the repetition a rebalance
// causes.
func (s *Source) Stale() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stale
}

// revoked is the client's OnPartitionsRevoked: it commits what was
// acknowledged of the revoked partitions and forgets them (see release).
func (s *Source) revoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	s.release(ctx, revoked, true)
}

// lost is the client's OnPartitionsLost: the member is out of the group,
// so a commit would fail; the partitions are forgotten.
func (s *Source) lost(ctx context.Context, _ *kgo.Client, lost map[string][]int32) {
	s.release(ctx, lost, false)
}

// release forgets the partitions parts: the records polled and not handed
// on, and the batches in flight, whose acknowledgements are ignored from
// now on (the new owner reads them again from the commit). With commit,
// it first commits, synchronously as the client asks of a revocation, what
// was acknowledged of them.
func (s *Source) release(ctx context.Context, parts map[string][]int32, commit bool) {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	offsets := map[string]map[int32]kgo.EpochOffset{}
	s.mu.Lock()
	gone := map[topicPartition]bool{}
	for topic, ps := range parts {
		for _, p := range ps {
			tp := topicPartition{topic, p}
			gone[tp] = true
			pt := s.parts[tp]
			if pt == nil {
				continue
			}
			if eo, ok := pt.due(); ok && commit {
				addOffset(offsets, tp, eo)
			}
			delete(s.parts, tp)
		}
	}
	kept := s.left[:0]
	for _, c := range s.left {
		if !gone[c.tp] {
			kept = append(kept, c)
		}
	}
	clear(s.left[len(kept):])
	s.left = kept
	s.mu.Unlock()
	if len(offsets) > 0 {
		cctx, cancel := context.WithTimeout(ctx, commitTimeout)
		defer cancel()
		if err := s.commitSync(cctx, offsets); err != nil {
			s.commits.fails.Failure(err, zap.String("group", s.cfg.Group))
		}
	}
}

// Close commits what was acknowledged, leaves the group and closes the
// client. What was read and not acknowledged is read again by the group's
// next member. It is idempotent.
func (s *Source) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.commits.stop()
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	err := s.commitDue(ctx)
	cancel()
	// Leaving the group revokes every partition (s.revoked, which finds
	// nothing left to commit).
	s.cl.Close()
	if err != nil {
		return fmt.Errorf("kafka: source of group %q: final commit: %w", s.cfg.Group, err)
	}
	return nil
}

// commitTimeout bounds one commit: a revocation waits for it, and the
// group's rebalance for the revocation.
const commitTimeout = 10 * time.Second
