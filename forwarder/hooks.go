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
	Fetch(partition int, offset int64) time.Time
}

// WatermarkPublisher is told what a replica wrote, so that it can publish
// the replica's watermark for each partition written. Each replica has its
// own; the writer calls it from several goroutines (the workers).
type WatermarkPublisher interface {
	// Publish is called after items were written to partition of the input
	// buffer of vertex to. offset is the partition's last offset after the
	// write (see Edge.Tail): at least the last offset this replica wrote,
	// more when other writers appended meanwhile, which only makes the
	// fetched watermark of the messages in between more conservative; -1
	// when the storage cannot tell. wm is the replica's
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

// WIPMarker tells storage with ack deadlines (JetStream) that in-flight
// messages are still being processed, so it does not redeliver them.
type WIPMarker interface {
	// InProgress is called every Hooks.WIPInterval for each partition with
	// messages in flight: offsets in [from, to) may still be in flight.
	InProgress(ctx context.Context, partition int, from, to int64) error
}

// Hooks are the optional extensions of one replica. Nil fields do nothing
// and cost nothing.
type Hooks struct {
	Fetcher     WatermarkFetcher
	Publisher   WatermarkPublisher
	Source      SourceWatermarker
	WIP         WIPMarker
	WIPInterval time.Duration // default 5s when WIP is set
}

// ControlTag marks a control message in a buffer (such as the watermark
// idle marker): readers ack and skip it, user functions never see it.
const ControlTag = "runnel/control"
