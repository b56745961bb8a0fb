package forwarder

import (
	"context"
	"time"
)

// WatermarkFetcher gives the watermark of the messages a replica reads
// from its input buffer. Each replica has its own; the reader calls it from
// one goroutine.
type WatermarkFetcher interface {
	// Fetch returns the watermark of the message at offset of partition.
	// The reader calls it once per read batch, at the batch's first data
	// message, and gives that watermark to the whole batch: a later offset
	// can only have the same or a higher one, so this is conservative.
	Fetch(partition int, offset int64) time.Time
}

// WatermarkPublisher is told what a replica wrote, so that it can publish
// the replica's watermark for each partition written. Each replica has its
// own; the writer calls it from several goroutines (the workers).
type WatermarkPublisher interface {
	// Publish is called after items were written to partition of the input
	// buffer of vertex to. offset is the offset of the last item this write
	// stored (the isb reports it, so writers appending concurrently do not
	// blur it). wm is the replica's
	// watermark: the lowest watermark of its in-flight messages, or the
	// newest watermark it has read when nothing is in flight (for a
	// source: what its SourceWatermarker returned).
	Publish(to string, partition int, offset int64, wm time.Time)
}

// SourceWatermarker turns what a source replica reads into the source's
// watermark. Each source replica has its own.
type SourceWatermarker interface {
	// Observe is called for each batch read, before it is written, with the
	// source partition (the replica index) and the batch's earliest event
	// time. It returns the source watermark; messages whose event time is
	// below it are marked Late.
	Observe(partition int, minEventTime time.Time) time.Time
}

// IdleFetcher is implemented by a WatermarkFetcher that can advance on
// reads that return nothing (watermark.Fetcher does). Without it, a
// partition that receives nothing holds the watermark of its reader.
type IdleFetcher interface {
	// FetchIdle is called for a partition that delivered nothing for one
	// Hooks.IdleInterval; next is the next offset the reader will read. It
	// returns the vertex watermark.
	FetchIdle(partition int, next int64) time.Time
}

// IdleSource is implemented by a SourceWatermarker that advances the
// watermark of a source partition with no data (watermark.Source does).
type IdleSource interface {
	// IdleAdvance is called when a read of the source partition (the
	// replica index) returned nothing (for a vertex.PartitionedSource:
	// none of the partitions it reads had anything). It returns the advanced watermark
	// and true when the watermark moved.
	IdleAdvance(partition int) (time.Time, bool)
}

// InputWatermarker is implemented by a SourceWatermarker that keeps a
// watermark per partition a source reads (watermark.Source does, with
// SourceConfig.Inputs): the source forwarder uses it for a
// vertex.PartitionedSource, whose batches each come from one of its
// partitions (the inputs), read by any of its replicas. A replica's
// watermark, which judges lateness and is published, is the lowest of the
// inputs'; without this interface (or for a source that reads one
// partition) each replica has one watermark, through Observe and
// IdleAdvance.
type InputWatermarker interface {
	// ObserveInput is Observe for a batch read from input of the source
	// partition (the replica index); it returns the partition's watermark.
	ObserveInput(partition, input int, minEventTime time.Time) time.Time
	// IdleAdvanceInput is called, after a batch from another input, for
	// each input the batch did not come from, so that an input without
	// data advances while the others flow. It returns the partition's
	// watermark and true when it moved.
	IdleAdvanceInput(partition, input int) (time.Time, bool)
}

// ControlWriter writes one control message (tagged ControlTag) to
// partition of the edge to vertex to and returns its offset: what
// Writer.WriteControl does.
type ControlWriter func(ctx context.Context, to string, partition int) (int64, error)

// IdlePublisher is implemented by a WatermarkPublisher that marks the
// output partitions a replica stopped writing to as idle, so that their
// readers' watermark does not wait for data that is not coming.
type IdlePublisher interface {
	// Idle is called every Hooks.IdleInterval from one goroutine of the
	// replica. wm is the replica's watermark (as for Publish); write writes
	// the control message an idle partition gets before its idle WMBs.
	Idle(ctx context.Context, wm time.Time, write ControlWriter) error
}

// EndPublisher is implemented by a WatermarkPublisher that publishes the
// final WMB of a partition a processor ended (the pipeline's does, through
// watermark.Publisher.PublishEnd): watermark.Max at the offset of its
// end-of-stream message, so that a processor that ends while others go on
// no longer holds its readers' watermark.
type EndPublisher interface {
	// PublishEnd is called once per partition of the edge to vertex to,
	// after the end-of-stream message was written there at offset.
	PublishEnd(to string, partition int, offset int64)
}

// EndFetcher is implemented by a WatermarkFetcher that learns which input
// partitions ended (watermark.Fetcher does): the reader tells it when every
// processor writing to a partition ended Final there, and the partition's
// watermark is watermark.Max from then on.
type EndFetcher interface {
	// EndPartition returns the vertex watermark once partition ended.
	EndPartition(partition int) time.Time
}

// EndSource is implemented by a SourceWatermarker whose source partitions
// can end (watermark.Source does): the source forwarder calls End when its
// source is exhausted, and the partition's watermark is watermark.Max.
type EndSource interface {
	// End records that partition (the replica index) is exhausted and
	// returns its watermark.
	End(partition int) time.Time
}

// Hooks are the optional extensions of one replica, all about watermarks.
// Nil fields do nothing and cost nothing.
type Hooks struct {
	Fetcher   WatermarkFetcher
	Publisher WatermarkPublisher
	Source    SourceWatermarker
	// IdleInterval is how often the idle hooks run (IdleFetcher for quiet
	// input partitions, IdlePublisher for quiet output partitions); default
	// DefaultIdleInterval when the Fetcher or Publisher implements them.
	IdleInterval time.Duration
}

// DefaultIdleInterval is the default Hooks.IdleInterval.
const DefaultIdleInterval = 100 * time.Millisecond

// idleInterval is h.IdleInterval or its default.
func (h Hooks) idleInterval() time.Duration {
	if h.IdleInterval > 0 {
		return h.IdleInterval
	}
	return DefaultIdleInterval
}

// ControlTag marks a control message in a buffer (the watermark idle
// marker, the end-of-stream message): readers ack and skip it (after noting
// an end of stream), user functions never see it.
const ControlTag = "runnel/control"
