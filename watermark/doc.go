// Package watermark tracks event-time progress through a pipeline.
//
// Every processor (a vertex replica) that writes to an edge publishes, per
// partition it writes, a [WMB]: "after offset O of partition P, nothing I
// write has an event time below W". WMBs and heartbeats go into a [Store],
// one bucket per edge, keyed by processor: [MemStore] in one process,
// JetStream KV when distributed.
//
// A [Publisher] (one per processor) publishes WMBs, throttled and never
// backwards, heartbeats on its own goroutine, and publishes idle WMBs capped
// by the oldest in-flight watermark, so an idle watermark never overtakes a
// message still being processed. Publishing never waits for the store: a
// WMB goes into its partition's slot (a newer one replaces it there) and
// the publisher's goroutine puts it, retrying while the store fails, so a
// store that is down holds watermarks back, never the data path. Stop
// (and Flush) put what is left, within their context.
//
// A [Fetcher] (one per reader) watches the buckets of its incoming edges and
// keeps, per upstream processor and partition, an offset timeline of the
// WMBs its reader has not read past (a reader far behind its upstream still
// finds the WMB below each message). The watermark of a message at offset o
// is the minimum over live processors of the newest timeline watermark whose
// offset is below o; the vertex watermark is the minimum over edges and
// partitions and never decreases. Processors whose heartbeats stop are
// dropped after a timeout. A pipeline over several processes, which start
// in any order and are killed and restarted, names every processor of
// each edge instead (strict mode, FetcherConfig.Processors): the edge's
// watermark is then the minimum over all of them, live or not, and holds
// until each has published. A watch the store cannot keep up fails the
// fetcher (FetcherConfig.OnFailure, Fetcher.Err): its watermark would
// otherwise stand still for good.
//
// Sources compute their watermark with [Source]: per source partition the
// minimum event time of each batch minus a maximum delay, advanced while the
// source is idle. A source that reads several inputs of its own, such as
// the partitions of a topic that any of its replicas may read, keeps that
// watermark per input (SourceConfig.Inputs), and each source partition's
// is the lowest of them: inputs resume from their own commits after a
// restart, and an input behind must not be judged on the watermark of one
// ahead. [IdleManager] decides when an idle output partition gets a
// control message and then idle WMBs.
//
// A stream that ends has the final watermark [Max]: a processor that ends
// its output publishes Max on each partition with [Publisher.PublishEnd], a
// source partition that is exhausted is at Max after [Source.End], and a
// reader whose partitions have all ended (it learns so from the
// end-of-stream messages it reads, see package forwarder) is at Max after
// [Fetcher.EndPartition] of each.
//
// Every time-dependent type takes a [Clock], so tests control time.
//
// # Wiring into a forwarder
//
// Reader (one Fetcher per replica, Partitions = the consumer's assigned
// partitions, Edges = EdgeBucket(pipeline, upstream, this vertex) for each input):
// Start, then WaitForProcessors(ctx, upstream replicas) (not needed in
// strict mode, where the watermark holds until every upstream replica
// published); Fetch(partition, offset) for every data message read
// (control messages need none);
// FetchIdle(partition, next offset to read) after a read that returned
// nothing, so quiet partitions advance; Stop on shutdown.
//
// Writer (one Publisher per replica, Processor = ProcessorName(vertex,
// replica), Edges = its outgoing buckets, InFlight = the tracker's
// LowestWatermark): Start; after writing to a partition, Publish(bucket,
// partition, highest offset written, replica watermark) and IdleManager.Wrote;
// periodically, for each partition not written, IdleManager.Next: on
// IdleWriteControl write one control message and call ControlWritten with its
// offset, on IdlePublish call PublishIdle with the replica watermark; Stop on
// shutdown. A source replica computes its watermark with Source.Observe per
// batch and Source.IdleAdvance when a read returns nothing; one that reads
// several inputs, with Source.ObserveInput per batch (under the input it
// came from) and Source.IdleAdvanceInput for the inputs the batch did not
// come from.
//
// End of stream: a writer that ends its output calls PublishEnd(bucket,
// partition, offset of its end-of-stream message) for each partition; an
// exhausted source partition calls Source.End; a reader calls
// EndPartition(partition) once every upstream processor ended the partition.
package watermark
