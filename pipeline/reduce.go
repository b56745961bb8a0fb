package pipeline

import (
	"fmt"
	"slices"

	"github.com/runnel-dev/runnel/forwarder"
	"github.com/runnel-dev/runnel/vertex"
)

// Reduce adds a vertex that groups the messages of in by key into the
// event-time windows w describes and folds each window with agg. It
// returns the results (one per window and key, with event time end - 1ms
// and the window's keys) and the late-data stream: the messages whose
// windows were all closed when they arrived (watermark >= end + allowed
// lateness), each with headers saying what made it late (the watermark it
// was read with, its window's end and close: vertex.LateWatermarkHeader and
// the two after it). Leave the late stream unconnected to drop late
// messages (they are counted in Stats as Late and Dropped). Stats count
// the vertex's results as Results, its late messages as Late.
//
// A message is judged late against the watermark it is read with, so a
// replay at full speed may find fewer messages late than the same data
// arriving in real time (see vertex.Windowing). Keys group exactly: the key
// lists {"a","b"} and {"a\x00b"}, nil and {""}, are different keys, each
// routed by a fixed hash of its length-prefixed encoding (isb.ByKeys).
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
// On durable storage the vertex keeps a write-ahead log of its windows
// (package wal) per input partition, in
// {dir}/{pipeline}.wal/{vertex}/partition-{p}, each replica writing the
// logs of the partitions it reads: every message is logged before it is
// acknowledged, a restart rebuilds the open windows from them, and a
// cancelled pipeline leaves its open windows there for the next run
// instead of emitting them (see forwarder.ReduceLog; EmitOpenWindowsOnStop
// emits them). A restart with other Replicas hands each partition's log,
// and its open windows, to the replica that now reads the partition. Each
// log records the partition count and the windowing, and a restart with
// another windowing while windows of the old one are open is a
// *WindowingError; a log missing although the input's commits say it
// held messages is a *ReduceLogError (ErrReduceLogMissing). The log
// encodes values with the codec of In (WithCodec; JSON by default).
//
// Concurrency: on durable storage a reduce replica runs one shard, so
// Concurrency defaults to 1 there, and a Concurrency above 1 is refused
// with an *OptionError (ErrInvalidOption) naming the vertex. Its log skips
// a message redelivered after a crash when its offset is at or below the
// highest one logged for its partition, which holds only if each
// partition's entries are appended in offset order; shards appending
// concurrently would interleave them, and a crash could leave a later
// offset durable and an earlier one not, which the restart would then skip
// (a loss). On memory storage Concurrency shards the replica's keys.
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
	logs := &reduceLogs{} // this run's WALs, on durable storage (reduce_wal.go)
	n.prepare = func(rt *runtime, n *node) error {
		if !logsReduce(rt.cfg.storage) {
			return nil
		}
		return logs.open(rt, p, n, w)
	}
	n.release = logs.closeAll
	n.run = func(rt *runtime, n *node, r int) (err error) {
		spec := forwarder.ReduceSpec[In, S, Out]{Window: w, Reducer: red, Late: edgesOf[In](n, true)}
		if logs.logs != nil {
			wals := logs.forReplica(n, r)
			defer func() {
				for part, l := range wals {
					if cerr := l.Close(); cerr != nil && err == nil {
						err = &VertexError{Vertex: n.name, Err: fmt.Errorf("reduce WAL of partition %d: %w", part, cerr)}
					}
				}
			}()
			spec.Log = &forwarder.ReduceLog[In]{WALs: wals, Codec: valueCodec[In](&rt.cfg), SessionIDs: &logs.ids, EmitOnStop: rt.cfg.emitOnStop}
		}
		return forwarder.RunReduce(rt.hard, rt.readStop(n), rt.replicaConfig(n, r), readerInput[In](rt, n, r), edgesFor[vertex.Windowed[Out]](n), spec)
	}
	late := streamOf[In](p, n)
	late.parts[0].late = true
	return streamOf[vertex.Windowed[Out]](p, n), late
}
