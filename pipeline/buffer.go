package pipeline

import (
	"errors"
	"fmt"

	"github.com/runnel-dev/runnel/forwarder"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// buffer is a vertex's input buffer, whatever its element type.
type buffer interface {
	// state is what Stats shows of the buffer: pending per partition and
	// the capacity in use.
	state() bufferState
	assigned(replica int) []int // the partitions replica reads
	// claimOf claims partitions for group in the buffer's storage (a
	// source replica's claim on shared storage).
	claimOf(group string, partitions []int) (isb.Lease, error)
	// committed is the vertex group's commit of partition p, as the
	// consumer reading it found or made it.
	committed(p int) (int64, error)
	// positions describes where the replicas this process runs resume:
	// per partition they read, its commit and the messages after it.
	positions() []string
	close() error
}

// inputBuffer is the input buffer of a vertex reading T: one topic of
// envelopes on the pipeline's storage (memory passes them without encoding,
// durable storage encodes them, see internal/envelope) and one consumer
// per replica, all in the group named after the vertex, which durable
// storage recovers with its commits.
type inputBuffer[T any] struct {
	topic     *isb.Topic[vertex.Message[T]]
	group     string
	consumers []*isb.PullConsumer[vertex.Message[T]]
	// logs are the topic's partitions in its storage, which a resumable
	// source feeding the buffer reads back (source_resume.go).
	logs []isb.Log[vertex.Message[T]]
	// claim is the storage's Claim: a source replica on shared storage
	// claims itself in its first output buffer (claimSource).
	claim func(group string, partitions []int) (isb.Lease, error)
}

// openBuffer creates n's input buffer on the pipeline's storage.
func openBuffer[T any](c *config, p *Pipeline, n *node) (buffer, error) {
	topic, backend, err := openTopicBackend[T](c, BufferSpec{
		Pipeline: p.name, Vertex: n.name,
		Partitions: n.cfg.Partitions, Capacity: n.cfg.BufferCapacity,
		Events: n.obs,
	})
	if err != nil {
		return nil, err
	}
	cs, err := openConsumers(c, n, topic)
	if err != nil {
		return nil, errors.Join(err, topic.Close())
	}
	logs := make([]isb.Log[vertex.Message[T]], topic.Partitions())
	for p := range logs {
		logs[p] = backend.Partition(p)
	}
	return &inputBuffer[T]{topic: topic, group: n.name, consumers: cs, logs: logs, claim: backend.Claim}, nil
}

// openConsumers opens the consumer of every replica of n this process
// runs (nil for the others) in the group named after n. On shared storage
// each replica joins the group by itself, claiming its partitions there: a
// replica another process runs is a *ReplicaError.
func openConsumers[T any](c *config, n *node, topic *isb.Topic[vertex.Message[T]]) ([]*isb.PullConsumer[vertex.Message[T]], error) {
	opts := []isb.ConsumerOption{isb.BatchSize(n.cfg.BatchSize), isb.ManualCommit()}
	if !c.storage.Shared() {
		return topic.PullConsumers(n.name, n.cfg.Replicas, opts...)
	}
	cs := make([]*isb.PullConsumer[vertex.Message[T]], n.cfg.Replicas)
	var errs []error
	for r := range cs {
		if !c.sub.runs(n, r) {
			continue
		}
		var err error
		if cs[r], err = topic.JoinGroup(n.name, r, n.cfg.Replicas, opts...); err != nil {
			if errors.Is(err, isb.ErrGroupInUse) {
				err = &ReplicaError{Vertex: n.name, Replica: r, Err: err}
			}
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		for _, cons := range cs {
			if cons != nil {
				cons.Close()
			}
		}
		return nil, errors.Join(errs...)
	}
	return cs, nil
}

func (b *inputBuffer[T]) state() bufferState {
	s := bufferState{
		partitions: b.topic.PendingByPartition(b.group, nil),
		used:       b.topic.Used(), capacity: b.topic.Capacity(), waiting: b.topic.Waiting(),
	}
	s.readers = make([]int, len(s.partitions))
	for p := range s.readers {
		s.readers[p] = -1
	}
	for r, c := range b.consumers {
		if c == nil {
			continue // a replica another process runs
		}
		for _, p := range c.Assigned() {
			s.readers[p] = r
		}
	}
	return s
}

func (b *inputBuffer[T]) assigned(r int) []int { return b.consumers[r].Assigned() }

func (b *inputBuffer[T]) claimOf(group string, partitions []int) (isb.Lease, error) {
	return b.claim(group, partitions)
}

func (b *inputBuffer[T]) committed(p int) (int64, error) {
	for _, c := range b.consumers {
		if c == nil {
			continue
		}
		if off, err := c.Committed(p); err == nil {
			return off, nil
		}
	}
	return 0, fmt.Errorf("no consumer of group %q reads partition %d", b.group, p)
}

func (b *inputBuffer[T]) positions() []string {
	var out []string
	for _, c := range b.consumers {
		if c == nil {
			continue
		}
		for _, p := range c.Assigned() {
			if off, err := c.Committed(p); err == nil {
				out = append(out, fmt.Sprintf("%d: commit %d, %d after it", p, off, b.logs[p].Count(off, b.logs[p].Tail())))
			}
		}
	}
	return out
}

func (b *inputBuffer[T]) close() error {
	var errs []error
	for _, c := range b.consumers {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(append(errs, b.topic.Close())...)
}

// inputOf is replica r's side of n's input buffer.
func inputOf[T any](n *node, r int) forwarder.Input[T] {
	b := n.in.(*inputBuffer[T])
	return forwarder.Input[T]{Consumer: b.consumers[r], Partitions: n.cfg.Partitions}
}

// edgesFor returns the outgoing edges of n, a vertex emitting T. The type
// assertions cannot fail: the typed builder functions only connect a
// Stream[T] to a vertex reading T.
func edgesFor[T any](n *node) []forwarder.Edge[T] { return edgesOf[T](n, false) }

// edgesOf returns the outgoing edges of n that are its late-data stream
// (late) or not.
func edgesOf[T any](n *node, late bool) []forwarder.Edge[T] {
	edges := make([]forwarder.Edge[T], 0, len(n.outs))
	for _, e := range n.outs {
		if e.late != late {
			continue
		}
		discard := e.to.cfg.DiscardWhenFull || e.discard
		b := e.to.in.(*inputBuffer[T])
		edges = append(edges, forwarder.Edge[T]{
			To:       e.to.name,
			Topic:    b.topic,
			When:     e.when,
			Discard:  discard,
			ByKey:    e.to.cfg.PartitionByKey,
			Counters: e.counters,
		})
	}
	return edges
}
