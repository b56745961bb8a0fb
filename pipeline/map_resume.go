package pipeline

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/forwarder"
	"github.com/runnel-dev/runnel/internal/origin"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// Resuming a map on durable storage.
//
// A map vertex (Map, FlatMap, KeyBy) on durable storage writes nothing
// twice across crashes (forwarder.MapResume says how, and why this way):
// its records carry their origin, each replica holds in its output buffers
// what it wrote for inputs whose commit is not yet durable, and before any
// replica reads the pipeline reads those buffers back from their heads and
// hands the replicas the outputs an earlier run wrote for inputs they will
// read again, which they do not write again.
//
// This is the read-back the resumable source does (source_resume.go) on
// the same scan (readBack); the source finds its records by message ID in
// the buffers only it writes to, the map by origin in any buffer, as the
// origin names the writer.

// prepareMap returns what the replicas of map vertex n need to resume, and
// holds what it found (nil on memory storage, which a crash empties). Run
// calls it once, after every buffer is open and before any replica starts.
func prepareMap[In, Out any](c *config, p *Pipeline, n *node) (*forwarder.MapResume, error) {
	if !c.storage.Durable() {
		return nil, nil
	}
	in := n.in.(*inputBuffer[In])
	var outs []*inputBuffer[Out]
	res := &forwarder.MapResume{Vertex: n.name}
	for _, e := range n.outs { // in the order of edgesFor, RunResumedMap's edges
		if !e.late {
			b := e.to.in.(*inputBuffer[Out])
			outs = append(outs, b)
			res.Parts = append(res.Parts, len(b.logs))
		}
	}
	res.Tails = func(dst []int64) {
		k := 0
		for _, b := range outs {
			for _, l := range b.logs {
				dst[k] = l.Tail()
				k++
			}
		}
	}
	res.Retain = func(holder string, k int, off int64) error {
		for _, b := range outs {
			if k < len(b.logs) {
				if err := b.topic.Retain(holder, k, off); err != nil {
					return fmt.Errorf("pipeline: retain buffer %s partition %d from offset %d: %w", b.group, k, off, err)
				}
				return nil
			}
			k -= len(b.logs)
		}
		return fmt.Errorf("pipeline: retain output partition %d of %d", k, len(outs))
	}
	res.Durable = func(p int) (int64, error) {
		if p < 0 || p >= len(in.logs) {
			return 0, fmt.Errorf("%w: input partition %d of %d", isb.ErrInvalidKey, p, len(in.logs))
		}
		return persistedCommit(in.logs[p], in.group), nil
	}
	// Everything from the holds on was retained: reading from the heads
	// reads it all (and what storage kept besides, whole segments).
	log := c.logger.With(zap.String("pipeline", p.name), zap.String("vertex", n.name))
	for i, b := range outs {
		start := make([]int64, len(b.logs))
		for q, l := range b.logs {
			start[q] = l.Head()
		}
		slots := make([]origin.Origin, scanBatch)
		err := b.readBack(log, start, func(buf []vertex.Message[Out]) {
			for k := range buf {
				*origin.Of(&buf[k]) = &slots[k]
			}
		}, func(q int, at int64, m *vertex.Message[Out]) error {
			return res.Note(i, q, at, *origin.Of(m))
		})
		if err != nil {
			return nil, fmt.Errorf("read back buffer %s: %w", b.group, err)
		}
	}
	if err := res.Hold(); err != nil {
		return nil, err
	}
	if outputs, inputs := res.Found(); inputs > 0 {
		log.Info("map resumes after the outputs an earlier run wrote for inputs it had not committed: it does not write them again",
			zap.Int("outputs found", outputs), zap.Int("of inputs", inputs))
	}
	return res, nil
}

// persistedCommit is group's commit of l as storage persisted it: what a
// restart resumes from (with CommitInterval, a commit is persisted some
// time after the reader made it).
func persistedCommit[T any](l isb.Log[T], group string) int64 {
	if g, ok := l.(interface{ persisted(string) (int64, bool) }); ok {
		c, _ := g.persisted(group)
		return c
	}
	c, _, _ := l.Committed(group) // an error: the head, where a read-back starts
	return c
}
