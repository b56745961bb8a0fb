// Package pipeline builds and runs a typed dataflow: sources, map and
// reduce vertices and sinks joined by partitioned inter-step buffers (the isb), each vertex
// run by one or more replicas of a forwarder.
//
// Vertices are added with generic functions, since methods cannot have type
// parameters: [Source] yields a [Stream], [Map], [FlatMap], [MapStream] and
// [BatchMap] turn a Stream[In] into a Stream[Out], [KeyBy] sets the keys
// of a Stream[T] from its values, [Reduce] and
// [ReduceStream] group a Stream[In] by key into event-time windows and
// return the Stream of window results beside the late-data Stream[In],
// [Sink] ends one. A
// vertex fed by several streams joins them ([Join]); a stream split by tags
// ([Stream.Where], [Stream.Tagged]) carries only the messages whose tags
// match. The compiler checks that the types of connected vertices agree.
//
//	p := pipeline.New("words")
//	lines := pipeline.Source(p, "lines", vertex.FromSlice(text))
//	words := pipeline.FlatMap(p, "split", lines, split)
//	pipeline.Sink(p, "count", words, vertex.Func(count))
//	err := p.Run(ctx)
//
// Run validates the whole graph first (duplicate names, a vertex without
// input or output, an edge from another pipeline, a cycle, bad options)
// and reports every problem naming its vertex. It returns nil when every
// source is exhausted, or ctx is cancelled, and everything read has been
// drained through to the sinks; otherwise the first error. Sources end
// their output with end-of-stream messages that flow through the buffers,
// and each vertex ends once all its inputs ended and it acked all it read
// (see package forwarder), so the drain does not depend on the vertices
// sharing a process. On exhausted sources every vertex's final watermark is
// watermark.Max, which closes every window; after a cancel it stays where
// it was.
//
// Event-time watermarks are on by default ([Watermarks] configures them,
// their store and whether there are any, in a [WatermarkConfig]): every
// message carries the watermark of the vertex that read it, sources
// mark late messages, and [Pipeline.Stats] reports each vertex's watermark.
//
// # Storage
//
// The buffers between vertices live on the storage [WithStorage] chooses:
// [Memory] (the default: values are passed as they are, nothing is
// encoded) or [MMap] under a data directory:
// memory-mapped files, one isb/mmap topic per reading vertex in
// {dir}/{pipeline}/{vertex}/, each message stored in the versioned envelope
// encoding of internal/envelope (ID, event time, keys, tags, headers,
// and the value through the codec [WithCodec] sets for its type, JSON by
// default; what the reader sets, the watermark and lateness, is not
// stored). A pipeline started again on the same directory resumes: each
// vertex reads its buffer from what it had acknowledged, and messages that
// were in flight are delivered again. A reduce vertex also keeps a
// write-ahead log of its open windows per input partition, in
// {dir}/{pipeline}.wal/{vertex}/partition-{p}/, so a restart rebuilds them,
// with the same or another number of replicas (see [Reduce]); a log that
// does not fit the vertex (another windowing while windows are open,
// another partition count, a log missing that the input's commits say
// existed) stops Run before any vertex starts, with a [*WindowingError] or
// a [*ReduceLogError] naming its directory.
//
// Any other [Storage] opens its buffers as bytes, which the pipeline
// encodes the same way: pipeline/jsstorage keeps them in NATS JetStream
// streams, source state and the run in JetStream KV, watermarks in
// JetStream KV and reduce logs on the local disk, so that one pipeline
// runs over several processes, each running the vertices and replicas
// [Only] and [Replicas] choose (see subset.go for what starts, stops and
// ends where).
//
// # Delivery guarantees
//
// runnel delivers at least once: every message a source hands over reaches
// every sink its tags select, once or more. What a source is told, and
// when, depends on the storage. A source's message is acknowledged (the
// source's vertex.Acker is called: FromTopic commits its consumer group,
// the generator records its position) once the message is written to the
// first buffer, and each vertex commits its input only after what it made
// of it is written to the next buffers. So:
//
//   - On memory storage, "written" means in memory. A clean stop (ctx
//     cancelled) drains every buffer and loses nothing, but a crash of the
//     process loses everything in the buffers and in flight, though the
//     sources were told it was delivered: tried as a new user would, a
//     durable topic feeding a memory pipeline lost 68,328 of 100,000
//     messages on one SIGKILL.
//   - On durable storage, "written" means durable: in the buffer's file.
//     A process killed at any moment (SIGKILL included) and started again
//     on the same directory loses nothing a source was told was delivered;
//     what was in flight is delivered again (the crash test of topic
//     source -> map -> sink counts the duplicates: docs/benchmarks.md). By
//     default a write returns once flushed to disk, so this holds for a
//     crash of the machine too; MMap(dir, mmap.Flush(mmap.Interval(d)))
//     makes writes return once in the page cache (which survives the
//     process, and the machine after the next flush), several times as
//     fast (docs/benchmarks.md). Commits are persisted every
//     [CommitInterval], which bounds the duplicates a crash causes.
//
// Sinks therefore may see a message again after a restart; IDs are stable
// across restarts (FromTopic: "partition-offset"; the generator: its
// sequence number), so a sink can deduplicate.
//
// What a crash can repeat, by source, on durable storage:
//
//   - A replayable and resumable source (the generator, or any
//     vertex.Resumable that is a vertex.Acker and a vertex.Acknowledged
//     and keeps the promises vertex.Resumable lists) is
//     never handed over twice to a buffer only it writes to: its position
//     is made durable together with what it wrote. With every save of the
//     position the pipeline records, in the state file, where in each such
//     buffer the writes the position does not cover begin, and the buffer
//     keeps them from there on; on restart it reads them back and tells the
//     source, which goes on after them (a write cut half-way, to one edge
//     and not another, is completed first). A reduce fed directly by such
//     a source therefore counts every input exactly once across crashes,
//     and a result emitted again after a crash is an identical re-emission
//     with the same ID (e2e's TestCrashDurableReduceGenerator holds it to
//     that across SIGKILLs).
//   - A map vertex ([Map], [FlatMap], [KeyBy]) writes nothing twice: every
//     record it writes carries its origin (the vertex, and the partition,
//     offset and output index of its input; a hidden field of the
//     envelope), each replica keeps in its output buffers what it wrote
//     for inputs whose commit is not yet persisted, and on restart the
//     pipeline reads those buffers back and the replicas write, for each
//     input they read again, only the outputs they did not find (an input
//     found whole is acknowledged at once; see forwarder.MapResume). This
//     assumes a deterministic map function; one that gives other outputs
//     when it maps an input again gets at least once for the outputs whose
//     index was not found, and the ones found stand.
//   - So a reduce fed by a replayable, resumable source through any chain
//     of such maps, with any number of replicas, counts every input
//     exactly once across crashes (e2e's map crash tests hold it to that
//     across SIGKILLs, with one and two map replicas).
//   - Every other case is at least once: FromTopic (its commit is saved
//     apart from the writes it covers, so what it wrote after its last
//     commit it writes again), sources held in the process, a buffer the
//     source shares with another vertex (a Join: another source's IDs
//     cannot be told from its own, so what it wrote there is written
//     again), a [MapStream] or [BatchMap] vertex (their outputs carry no
//     origin), a reduce's results (a reduce that a kill stops between
//     writing a window's results and logging that it closed emits them
//     again: identical results with the same ID, which a deduplicating
//     sink drops), and a sink, which a kill stops between its write and
//     its commit. The reduce itself never counts an input offset twice
//     (see forwarder.ReduceLog). On memory storage nothing of this
//     applies: a crash loses the buffers (above).
//
// Which built-in sources are replayable, on durable storage: the generator
// (vertex.Generator, a vertex.Resumable: it continues after what was
// acknowledged, its position kept in {dir}/{pipeline}/{vertex}.source) and
// the topic source (vertex.FromTopic: its position is its consumer group's
// commit in the topic, so an isb/mmap topic makes the input replayable).
// FromChannel, FromSeq, FromSlice and FromMessages are not: their data is
// in the process, so after a restart they start from their beginning
// (FromSlice hands over its whole slice again) while the buffers resume.
// Watermarks are kept in memory (unless WatermarkConfig.Store says otherwise):
// after a restart they start again from the messages read.
//
// # Seeing it run
//
// [Pipeline.Stats] and [Pipeline.Status] may be called at any time, from
// any goroutine: every vertex's counts (drops by reason), its input
// buffer per partition and whether it is full, its rates over 1, 5 and 15
// minutes (sampled every second while it runs), its watermark, processing
// time, flush and WAL commit times and last error; every edge's counts,
// rate and watermark. They read counters the forwarders keep per batch
// anyway. Package pipeline/monitor serves them as Prometheus metrics, a
// /status JSON and a live page of the DAG.
package pipeline
