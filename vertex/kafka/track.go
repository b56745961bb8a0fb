package kafka

import "github.com/twmb/franz-go/pkg/kgo"

// topicPartition names a partition of a topic.
type topicPartition struct {
	topic     string
	partition int32
}

// partition is what the source tracks of a partition assigned to it, from
// its first delivered batch until the partition is revoked or lost: the
// batches handed to the pipeline and not yet acknowledged, in read order,
// and how far the acknowledged prefix reaches, committed or not.
//
// Kafka's offsets have gaps (compaction, transaction markers), so "every
// offset below o is acknowledged" cannot be told from offsets alone: it is
// told from the batches, which the source delivers in offset order and
// the pipeline acknowledges in any order. The commit point is the end of
// the longest run of acknowledged batches at the front; an acknowledged
// batch behind one still in flight waits for it.
type partition struct {
	spans []span
	// acked is the offset after the acknowledged prefix, with the leader
	// epoch of its last record: what the next commit sends. -1: nothing
	// acknowledged yet.
	acked      int64
	ackedEpoch int32
	// committed is the highest offset a commit of this source stored for
	// the partition, -1 for none.
	committed int64
}

// span is a delivered batch: n records from offset first to offset last
// (both included), the last with leader epoch epoch.
type span struct {
	first, last int64
	n           int
	epoch       int32
	acked       bool
}

func newPartition() *partition { return &partition{acked: -1, committed: -1} }

// deliver records a batch of records, in offset order, as handed to the
// pipeline.
func (p *partition) deliver(recs []*kgo.Record) {
	last := recs[len(recs)-1]
	p.spans = append(p.spans, span{first: recs[0].Offset, last: last.Offset, n: len(recs), epoch: last.LeaderEpoch})
}

// ack marks the batch of n messages starting at offset first acknowledged
// and reports whether it held that batch and whether the acknowledged
// prefix grew. A batch it does not hold (one read before the partition was revoked and assigned again, or
// acknowledged already) changes nothing: the pipeline acknowledges only
// what was written downstream, so an offset acknowledged in an earlier
// assignment needs no second acknowledgement, and none is waited for.
func (p *partition) ack(first int64, n int) (held, grew bool) {
	i := 0
	for i < len(p.spans) && p.spans[i].first < first {
		i++
	}
	if i == len(p.spans) || p.spans[i].first != first || p.spans[i].n != n || p.spans[i].acked {
		return false, false
	}
	p.spans[i].acked = true
	done := 0
	for done < len(p.spans) && p.spans[done].acked {
		done++
	}
	if done == 0 {
		return true, false
	}
	end := p.spans[done-1]
	p.acked, p.ackedEpoch = end.last+1, end.epoch
	p.spans = append(p.spans[:0], p.spans[done:]...)
	return true, true
}

// due reports whether the acknowledged prefix reaches past the last
// commit, and the offset to commit.
func (p *partition) due() (kgo.EpochOffset, bool) {
	if p.acked <= p.committed {
		return kgo.EpochOffset{}, false
	}
	return kgo.EpochOffset{Epoch: p.ackedEpoch, Offset: p.acked}, true
}
