// Package mmap is the durable storage of the ISB: every partition is a log
// of memory-mapped segment files, with checkpoints for the producer, the
// retained range and each consumer group. Items and commits survive a crash
// of the process; with the Immediate flush policy (the default) they also
// survive a crash of the machine.
//
//	topic, err := mmap.NewTopic[Order](dataDir, "orders",
//		mmap.Topic(isb.Partitions(4)), mmap.Flush(mmap.Batch(100)))
//
// One option list configures both: storage options, and the topic's
// options carried by Topic.
//
// # Layout
//
//	{dir}/{topic}/                          exclusive flock while open
//	    topic.meta                          format version, partitions, codec, type
//	    partition-00000/
//	        00000000000000000000.seg        segment, named by its first offset
//	        00000000000000004711.seg
//	        producer.offset                 where the flushed log ends
//	        earliest.offset                 first retained offset
//	        offsets/{escaped group}/consumer.offset
//
// The first commit of a group builds its directory as offsets/.tmp-{group}
// with consumer.offset inside and renames it into place; DeleteGroup renames
// it away before removing it. A group directory therefore always holds its
// checkpoint.
//
// Group names are escaped into one path component, reversibly: bytes outside
// [A-Za-z0-9_-] (and a leading '.') become %XX, the empty name is "%".
// Temporary names are this package's own: a segment or checkpoint name plus
// ".tmp", "partition-NNNNN.tmp", and ".tmp-{escaped group}" in offsets/
// (no escaped name starts with '.'). Open removes those and leaves any other
// file alone (logging it).
//
// # Topic metadata
//
// topic.meta is written once, atomically, before the first partition:
//
//	+--------+---------+------------+---------+-------+---------+------+--------+
//	| "RNLT" | format  | partitions | len u16 | codec | len u16 | type | crc32c |
//	| u32    | version | u32        |         | name  |         | name | of all |
//	+--------+---------+------------+---------+-------+---------+------+--------+
//
// An Open asking for another partition count (which would move keyed items
// to other partitions), codec (which would decode wrong values) or element
// type (import path and name; a struct read as another struct decodes zero
// values) is a *MismatchError saying what is stored and what was asked;
// nothing is changed on disk. A topic directory with partitions and no
// metadata file is a *CorruptError.
//
// # Segment
//
// A segment is preallocated to its full size with ftruncate (a hole: it is
// never filled with zeros, which would make every flush write back far more
// than the new records), mapped shared for readers, and advised
// MADV_RANDOM so that reads do not read ahead. Records are written with
// pwrite into the page cache the mapping shows and flushed with fdatasync,
// never stored through the mapping: a store dirties the page through the
// page table, which costs a fault after every flush and, when the flush
// cleans the page, a TLB shootdown on every CPU (segment.go). A write into
// the hole on a full disk is an error of the write, which fails the
// partition; a fault of a reader or of recovery on the mapping (a segment
// truncated by someone else, a hole that a full tmpfs has no page for) is
// caught and returned as a *FaultError naming the segment and byte instead
// of killing the process. Recovery reads no hole through the mapping: it
// decodes records only up to where the written data ends (SEEK_HOLE), so a
// full tmpfs, where reading a hole through a mapping needs a page, does not
// stop it. All integers are little-endian.
//
//	0                 32                                          size
//	+-----------------+--------+--------+-----+--------+-------------+
//	| segment header  | record | record | ... | record | zero bytes  |
//	+-----------------+--------+--------+-----+--------+-------------+
//
//	segment header (32 bytes):
//	+--------+---------+-------------+-------------+-----------+---------+
//	| "RNLS" | version | first  int64| next  int64 | file size | crc32c  |
//	| u32    | u32 = 1 | (= name)    | -1: active  | u32       | of 0:28 |
//	+--------+---------+-------------+-------------+-----------+---------+
//	 0        4         8             16            24          28
//
// next is written when the segment is sealed at a rollover: the offset after
// its last record, which must be the first offset of the next segment. It
// lets Open detect a missing segment without reading any record. The file
// size is fixed at creation and no crash changes it, so a file of another
// size was truncated (or extended) by something else.
//
// # Record
//
//	+------------+------------+--------------+-------------+--------------+
//	| length u32 | crc32c u32 | offset int64 | payload     | end marker   |
//	| of payload | Castagnoli | of the item  | length bytes| u32 "RNL\n"  |
//	+------------+------------+--------------+-------------+--------------+
//	 0            4            8              16            16+length
//
// The crc covers length, offset and payload. A record is valid only with a
// matching crc, its expected offset and the end marker. The payload is the item encoded by the topic's
// codec (isb/codec; JSON by default). A record must fit in one segment: a
// larger item is a *TooLargeError naming both sizes.
//
// # Checkpoint
//
// Each checkpoint file is replaced atomically (write a temporary file,
// fsync, rename, fsync the directory):
//
//	+--------+---------+----------+----------+----------+----------+----------+----------+---------+
//	| "RNLC" | version | kind u32 | v0 int64 | v1 int64 | v2 int64 | v3 int64 | v4 int64 | crc32c  |
//	|        | u32 = 1 | 1,2,3    |          |          |          |          |          | of 0:52 |
//	+--------+---------+----------+----------+----------+----------+----------+----------+---------+
//	 0        4         8          12         20         28         36         44         52        56
//
//	kind 1 producer.offset: v0 tail offset, v1 first offset of its segment,
//	                        v2 byte position of the tail there, v3 byte
//	                        position of the record before it (-1: none),
//	                        v4 1 if written by Close (clean), else 0
//	kind 2 earliest.offset: v0 first retained offset
//	kind 3 consumer.offset: v0 the group's commit (everything below is done)
//
// # Durability
//
// Flush policies: Immediate (an Append returns after its records are
// flushed), Batch(n) and Interval(d). A rollover and a commit are always
// flush boundaries, so a commit never survives a crash that loses what it
// covers.
//
// Flushes are grouped (flush.go): a partition serializes its appenders
// only while they write their records, and declares isb.Caps.Concurrent,
// so the topic does not hold a lock across the flush.
// Under Immediate an appender then flushes (fdatasync) everything written up
// to that moment, its own records and those of every appender that copied
// before it, unless a flush that ran meanwhile covered its records already.
// Appenders arriving while one flush runs share the next: an Append still
// returns only after a flush that covers its records succeeded, and one
// flush serves a wave of concurrent appenders (counted in
// TestConcurrentAppendersShareAFlush). No appender waits for a timer or
// for company. Records are published (Tail, readers) only after that
// flush, so an Append that fails leaves its records invisible; a failed
// flush fails every appender waiting on it and is sticky. Writes are
// deferred (isb.Caps.Deferred, except under Interval): Append writes the
// records without flushing or publishing them and returns an isb.Write
// whose Wait flushes and publishes, so that a producer writing batch after
// batch from one goroutine overlaps each flush with its next writes (see
// isb/staged.go). producer.offset is written only after the log is flushed, at
// every rollover, at Close and after every 4 MiB flushed; it may lag the
// log, never lead it.
//
// # Recovery
//
// Open takes an exclusive flock on the topic directory (a second open, in
// this or another process, fails with ErrLocked), checks topic.meta and,
// per partition, reads the checkpoints and one header per segment, checks
// the record just before the producer checkpoint, then scans forward from
// it over records flushed after it. A topic closed cleanly (Close marks
// the producer checkpoint, the first append after open clears the mark) is
// opened without writing anything. Open reads no record of the retained
// log before the producer checkpoint: its cost grows only with the number
// of segment files (one header read each, 4096 for a terabyte of 256 MiB
// segments), not with the bytes they hold.
//
// One rule decides what damage costs, the same after a clean close and
// after a crash, because it looks only at the files:
//
//   - A record below producer.offset was flushed before the checkpoint was
//     written, so it is never cut. If it is damaged it stays at its offset.
//   - Past producer.offset, the first record of the active segment that
//     fails its checks is a torn tail only if no intact record follows it
//     in the segment: a crash leaves nothing but never-written bytes after
//     a torn write. A torn tail is cut off (logged with segment, byte and
//     offset: holes are punched, nothing is written) and overwritten by the
//     next append. A damaged record with intact records after it, or in a
//     sealed segment, stays at its offset.
//   - A damaged record costs that record only. Readers resynchronise after
//     it on its length field or, when that is damaged too, on the next
//     intact record, so the records after it stay readable. Reading the
//     damaged offset is a *CorruptError (matching isb.ErrCorrupt) naming the
//     segment file and byte position; consumers step past it with
//     isb.PullConsumer.Skip (push consumers skip it after reporting it).
//     A record whose checksum holds but whose payload the codec cannot
//     decode is reported the same way.
//   - Damage that leaves the shape of the log unknown fails Open with a
//     *CorruptError naming the file: a damaged segment header, a segment of
//     another size than it was created with (truncated), a missing segment
//     inside the retained range, a group directory whose consumer.offset is
//     missing or damaged (its commit cannot be rebuilt: taking it as "never
//     committed" would silently redeliver the whole log), a commit outside
//     the log, or more partition directories than topic.meta records.
//   - Checkpoints that the checksummed records can rebuild are rebuilt,
//     with a log line: a missing or damaged producer.offset by scanning the
//     last segment from its start, a missing or damaged earliest.offset
//     from the first segment file.
//
// What differs after a crash is only where producer.offset points: it lags
// the log, so the last records are past it. A damaged last record is kept
// and reported after a clean close, and cut as a torn tail after a crash.
//
// Records recovered from disk are indexed on first read: a read inside a
// segment checks every record from the segment's start up to it, once.
//
// # Retention
//
// Without MaxRetainedConsumedSegments every segment is kept. With it, a
// sealed segment is deleted once every known group (running, or persisted
// in offsets/) has committed past it and more than n consumed segments
// remain; earliest.offset is moved and flushed before the file is deleted.
// Bounded capacity (isb.Capacity) works as in memory mode.
// isb.Topic.DeleteGroup removes offsets/{escaped group}/ from every partition
// and fsyncs each offsets directory, so a deleted group no longer holds data
// and is not recovered by the next open.
//
// # Inspecting
//
// Inspect and Verify describe a topic directory without opening it: they
// take no lock and write nothing (cmd/runnel shows what they find).
// Inspect reads what Open reads; Verify reads and checks every record
// besides. Both decide with recovery's own functions what Open would
// refuse or a read report (TopicInfo.Damage, each a *CorruptError) and
// what Open would repair by itself (TopicInfo.Repairs).
//
// The package runs on Linux and macOS (flock, mmap, fdatasync, madvise).
package mmap
