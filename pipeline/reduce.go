package pipeline

import (
	"fmt"
	"path/filepath"
	"slices"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/forwarder"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/wal"
)

// Reduce adds a vertex that groups the messages of in by key into the
// event-time windows w describes and folds each window with agg. It
// returns the results (one per window and key, with event time end - 1ms
// and the window's keys) and the late-data stream: the messages whose
// windows were all closed when they arrived (watermark >= end + allowed
// lateness). Leave the late stream unconnected to drop late messages (they
// are counted in Stats as Late and Dropped).
//
// Edges into a reduce vertex route by the messages' keys, so a key always
// reaches the same partition and replica; messages without keys all go to
// one partition (a global window). A window closes when the vertex
// watermark passes it. When the input ends (the sources are exhausted) the
// watermark is the maximum and every window closes; when the pipeline is
// cancelled, every window still open is emitted as it is when the vertex
// has drained, since its windows are the only copy of the messages it
// acknowledged.
//
// On durable storage each replica keeps a write-ahead log of its windows
// (package wal) in {dir}/{pipeline}.wal/{vertex}/replica-{r}-of-{n}: every
// message is logged before it is acknowledged, a restart rebuilds the open
// windows from it, and a cancelled pipeline leaves its open windows there
// for the next run instead of emitting them (see forwarder.ReduceLog). The
// log encodes values with the codec of In (WithCodec; JSON by default).
//
// Validation names the vertex for a bad window (see vertex.Windowing's
// Validate) or a nil aggregator function.
func Reduce[In, Acc, Out any](p *Pipeline, name string, in Stream[In], w vertex.Windowing, agg vertex.Aggregator[In, Acc, Out], opts ...vertex.Option) (results Stream[vertex.Windowed[Out]], late Stream[In]) {
	return addReduce(p, name, in, w, forwarder.Aggregate(agg), func() error { return agg.Validate(w.Kind) }, opts)
}

// ReduceStream is Reduce with a streaming reducer: fn is called once per
// closed window and key with the window's messages and emits any number of
// results.
func ReduceStream[In, Out any](p *Pipeline, name string, in Stream[In], w vertex.Windowing, fn vertex.ReduceStreamFunc[In, Out], opts ...vertex.Option) (results Stream[vertex.Windowed[Out]], late Stream[In]) {
	return addReduce(p, name, in, w, forwarder.StreamReduce(fn), func() error {
		if fn == nil {
			return ErrNilFunc
		}
		return nil
	}, opts)
}

func addReduce[In, S, Out any](p *Pipeline, name string, in Stream[In], w vertex.Windowing, red forwarder.Reducer[In, S, Out], check func() error, opts []vertex.Option) (Stream[vertex.Windowed[Out]], Stream[In]) {
	// Keys decide the window state a message joins: they must decide its
	// partition too.
	opts = append(slices.Clip(opts), vertex.PartitionByKey())
	n := addReader[In](p, name, kindReduce, in, opts, false)
	n.check = func() error {
		if err := w.Validate(); err != nil {
			return err
		}
		return check()
	}
	n.run = func(rt *runtime, n *node, r int) (err error) {
		spec := forwarder.ReduceSpec[In, S, Out]{Window: w, Reducer: red, Late: edgesOf[In](n, true)}
		if s, ok := rt.cfg.storage.(*mmapStorage); ok {
			dir := filepath.Join(s.dir, p.name+".wal", n.name, fmt.Sprintf("replica-%d-of-%d", r, n.cfg.Replicas))
			// The WAL logs what its recovery repaired.
			log, err := wal.Open(dir, wal.Logger(rt.log.With(zap.String("vertex", n.name), zap.Int("replica", r))))
			if err != nil {
				return &VertexError{Vertex: n.name, Err: fmt.Errorf("reduce WAL of replica %d: %w", r, err)}
			}
			defer func() {
				if cerr := log.Close(); cerr != nil && err == nil {
					err = &VertexError{Vertex: n.name, Err: fmt.Errorf("reduce WAL of replica %d: %w", r, cerr)}
				}
			}()
			spec.Log = &forwarder.ReduceLog[In]{WAL: log, Codec: valueCodec[In](&rt.cfg)}
		}
		return forwarder.RunReduce(rt.hard, rt.hard, rt.replicaConfig(n, r), readerInput[In](n, r), edgesFor[vertex.Windowed[Out]](n), spec)
	}
	late := streamOf[In](p, n)
	late.parts[0].late = true
	return streamOf[vertex.Windowed[Out]](p, n), late
}
