// Package wal is the write-ahead log of a reduce vertex: every message the
// reduce reads is appended, with its window assignment, before it is
// acknowledged to the ISB, so that a restart rebuilds every open window by
// replaying the log. It is built on github.com/tidwall/wal, which keeps the
// segment files and writes batches with one fsync; this package adds what
// tidwall/wal lacks: a crc32c and format version per entry, group commit,
// torn-tail repair, typed errors for other damage, an exclusive lock, and
// compaction that bounds the log by open windows.
//
//	w, err := wal.Open(filepath.Join(dataDir, "reduce-0"))
//	for e, err := range w.Replay() { ... rebuild e.Windows from e ... }
//	rec := w.Recovered() // skip redelivered offsets <= rec.LastOffsets[p]
//	err = w.Append(ctx, entries...) // durable on return: ack to the ISB now
//	p, err := w.AppendAsync(ctx, entries...) // or: read on, ack after p.Wait
//	err = w.GC(ctx, watermark, closedWindows...) // after emitting them
//
// # Contract
//
// Append returns once its entries are fsync'd; AppendAsync returns at once
// with a Pending that is done then, so that its caller reads and appends
// on meanwhile (appends of one goroutine complete in order). Concurrent
// appends and GCs
// are coalesced by one committer goroutine into a single tidwall/wal write
// batch and one fsync (a batch that starts a new segment adds the old
// segment's fsync, which tidwall/wal does, and this package's fsyncs of the
// directory and the tail hint). An Append that returned is replayed after any crash
// (kill -9 or power loss), unless a later GC event closed all its windows.
// A batch whose write was in flight at a crash may survive in part (a
// prefix, or nothing): its messages were not acknowledged, so the ISB
// redelivers them; Recovered.LastOffsets lets the reduce skip the ones the
// log holds. Closing windows appends a GC event; compaction (at Open, every
// CompactEvery, and when the log doubled since the last one) rewrites the
// log without closed windows, so disk use follows the open windows, not
// history. After Open it runs in a goroutine of its own, owned by the
// committer, so appends are never held by it: it rewrites the entries up
// to a snapshot while appends go on, then the committer copies what was
// appended since and switches generations. What compaction drops is summed up in the new generation's
// checkpoint entry: the highest offset per partition and the highest GC
// watermark, both in Recovered.
//
// # Layout
//
// One WAL per reduce input partition (package pipeline; any set of
// partitions works), in a directory of its own:
//
//	{dir}/                                 exclusive flock while open
//	    META                               the metadata record (meta.go)
//	    gen-00000000000000000007/          the live generation
//	        00000000000000000001           tidwall/wal segment files, named by
//	        00000000000000052113           the index of their first entry
//	        TAIL                           first index of the newest segment
//	        CLOSED                         last index at the last clean Close
//	    gen-00000000000000000008.tmp/      a compaction in progress
//
// Compaction writes gen-{n+1}.tmp, fsyncs it, renames it to gen-{n+1} and
// fsyncs {dir}: the rename is the switch. Open takes the highest gen-{n}
// and, once it passed every check of Recovery, removes older generations
// and .tmp ones (what a crash leaves around a switch): a highest
// generation that is refused (an empty directory, say, which no switch
// leaves) leaves the one before it in place. TAIL (8-byte index, crc32c; replaced atomically when a batch
// starts a segment, with a directory fsync that tidwall/wal does not do)
// lets Open notice a deleted newest segment. CLOSED (8-byte index of the
// last entry, crc32c; written atomically by Close once the log is fsync'd,
// unless the WAL stopped on a write error) records a clean close, as
// isb/mmap's producer.offset does; a generation a compaction builds starts
// without one. It is not cleared by the next Open or Append (that would
// cost an fsync at the first append): entries after the index it names
// were appended after a clean Open. Files named like a segment
// with a suffix (tidwall/wal's .START/.END/.TEMP, which its Open would act
// on) are refused; other stray files are left alone.
//
// META is written when Open creates the log, after its first generation
// (a crash between the two leaves a generation without a record, which the
// next Open adopts, as it does a log of a version before records), and is
// replaced atomically by SetMetadata. It holds the caller's Metadata (a
// reduce records its partition, partition count and windowing, and
// compares them at the next Open) and says that a log lives in {dir}: a
// META without a generation is a deleted live generation, a *CorruptError
// naming {dir}, never a new empty log. Exists tells whether a directory
// holds a log without creating one; Recovered.Created whether Open made it.
//
// # Segment
//
// A segment is tidwall/wal's binary format: frames of a uvarint length and
// that many bytes, one frame per entry, indexes consecutive from 1 in each
// generation. Each frame's bytes are one entry (integers little-endian):
//
//	 0        4         5      6       7            15
//	+--------+---------+------+-------+------------+---------------------+
//	| crc32c | version | kind | flags | batch u64  | body                |
//	| of 4:  | u8 = 2  | u8   | u8    | write batch| (by kind)           |
//	+--------+---------+------+-------+------------+---------------------+
//	flags: 1 = last entry of its write batch
//
//	kind 1, message:
//	+-----------+--------+------------+------------+------------------+------------+-------+
//	| partition | offset | event time | id         | keys             | windows    | value |
//	| u32       | i64    | i64 ns     | len, bytes | n, (len, bytes)* | n, window* | rest  |
//	+-----------+--------+------------+------------+------------------+------------+-------+
//	kind 2, GC event:    | watermark i64 ns | windows: n, window* |
//	kind 3, checkpoint:  | watermark i64 ns | n, (partition u32, offset i64)* |
//	window:              | start i64 ns | end i64 ns | session u64 (0: aligned) |
//
// n and len are uvarints; a zero time is stored as the minimum int64.
// Version 2 added the message id; an entry of version 1 (or any other) is
// refused with a *VersionError naming its segment and index. Entry
// 1 of every generation is its checkpoint, and no other entry is one.
// Compaction writes all its entries as one batch. A GC event without
// windows, in the batch of the entry before it, is written by Open to end a
// batch that a crash cut short (see Recovery).
//
// # Recovery
//
// Open walks every segment of the live generation, checking each entry's
// crc and version and that each segment holds exactly the indexes up to the
// next one's name. The first bad entry of the last segment is a torn tail
// if nothing after it is an intact entry of another write batch than the
// one in flight at the crash (the batch of the entry before the damage, or
// the next one if that entry ended its batch): a kill tears a prefix, a
// power loss may also persist later sectors of the unsynced write. Only a
// crash tears, and only what was appended after the last clean close: a
// bad entry at or below the index CLOSED names was fsync'd and
// acknowledged before that Close, so it is damage, whatever follows it, and
// so is a log that ends before that index (entries removed at a boundary).
// The tail is cut (truncate, fsync), logged (Logger) and reported in
// Recovered.Repaired, with each intact entry cut with it (partition and
// offset: never acknowledged, so the ISB redelivers them); tidwall/wal,
// which refuses a torn tail itself, opens the repaired log.
// Any other damage (an intact entry of a later batch after the bad one,
// damage in an earlier segment or at or below CLOSED, a missing, short or
// extra segment, a first entry that is not a checkpoint, a damaged CLOSED)
// is a *CorruptError naming the file, the entry index and the byte
// position; an intact entry of another format version is a *VersionError.
// Neither changes anything on disk. After a clean close with nothing
// appended since, Recovered.Clean is set. One change is not detectable
// after a crash: bytes removed from the end of the newest segment exactly
// at an entry boundary, past what CLOSED names, look like a crash before
// those batches were written (marking where the log ends after every
// batch would cost a second fsync per batch); a crash itself never does
// this to acknowledged entries, since they were fsync'd.
//
// Open reads the whole live generation, which compaction keeps to the open
// windows (docs/benchmarks.md measures it).
// Replay reads it again without re-checking crcs.
//
// # Inspecting
//
// Inspect reads a log directory without opening it: it takes no lock and
// repairs, compacts and writes nothing (cmd/runnel shows what it finds).
// Open's own walk decides what is damage (Info.Damage) and what a torn
// tail Open would cut (Info.Repair); a second scan goes on past damage, so
// the intact entries after a damaged one are counted.
package wal
