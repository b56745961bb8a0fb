// Package mmap is the durable storage of the ISB: every partition is a log
// of memory-mapped segment files, with checkpoints for the producer, the
// retained range and each consumer group. Items and commits survive a crash
// of the process; with the Immediate flush policy (the default) they also
// survive a crash of the machine.
//
//	topic, err := mmap.NewTopic[Order](dataDir, "orders",
//		[]mmap.Option{mmap.Flush(mmap.Batch(100))}, isb.Partitions(4))
//
// # Layout
//
//	{dir}/{topic}/                          exclusive flock while open
//	    partition-00000/
//	        00000000000000000000.seg        segment, named by its first offset
//	        00000000000000004711.seg
//	        producer.offset                 where the flushed log ends
//	        earliest.offset                 first retained offset
//	        offsets/{escaped group}/consumer.offset
//
// Group names are escaped into one path component, reversibly: bytes outside
// [A-Za-z0-9_-] (and a leading '.') become %XX, the empty name is "%".
//
// # Segment
//
// A segment is preallocated to its full size with ftruncate (a hole: it is
// never filled with zeros, which would make every msync write back far more
// than the new records), mapped shared, and advised MADV_RANDOM so that
// msync writes back only the dirty pages. A write into the hole on a full
// disk faults; the fault is caught and fails the partition with an error
// instead of killing the process. All integers are little-endian.
//
//	0                 32                                          size
//	+-----------------+--------+--------+-----+--------+-------------+
//	| segment header  | record | record | ... | record | zero bytes  |
//	+-----------------+--------+--------+-----+--------+-------------+
//
//	segment header (32 bytes):
//	+--------+---------+-------------+-------------+---------+----------+
//	| "RNLS" | version | first  int64| next  int64 | crc32c  | reserved |
//	| u32    | u32 = 1 | (= name)    | -1: active  | of 0:24 | u32      |
//	+--------+---------+-------------+-------------+---------+----------+
//	 0        4         8             16            24        28
//
// next is written when the segment is sealed at a rollover: the offset after
// its last record, which must be the first offset of the next segment. It
// lets Open detect a missing segment without reading any record.
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
// matching crc, its expected offset and the end marker; the log ends at the
// first record that is not. The payload is the item encoded by the topic's
// codec (isb/codec; JSON by default). A record must fit in one segment: a
// larger item is a *TooLargeError naming both sizes.
//
// # Checkpoint
//
// Each checkpoint file is replaced atomically (write a temporary file,
// fsync, rename, fsync the directory):
//
//	+--------+----------+----------+----------+----------+----------+----------+---------+-----+
//	| "RNLC" | kind u32 | v0 int64 | v1 int64 | v2 int64 | v3 int64 | v4 int64 | crc32c  | pad |
//	|        | 1,2,3    |          |          |          |          |          | of 0:48 |     |
//	+--------+----------+----------+----------+----------+----------+----------+---------+-----+
//	 0        4          8          16         24         32         40         48        52   56
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
// covers. producer.offset is written only after the log is flushed, at
// every rollover, at Close and after every 4 MiB flushed; it may lag the
// log, never lead it.
//
// # Recovery
//
// Open takes an exclusive flock on the topic directory (a second open, in
// this or another process, fails with ErrLocked) and, per partition, reads
// the checkpoints and one header per segment, checks the record just before
// the producer checkpoint, then scans forward from it over records flushed
// after it. The first invalid record ends the log: a torn or partial tail
// is cut off (the file is truncated there and extended again) and
// overwritten by the next append. A topic closed cleanly (Close marks the
// producer checkpoint, the first append after open clears the mark) is
// opened without writing anything. Open reads no record of the retained log
// before the producer checkpoint: its cost grows only with the number of
// segment files (one header read each, 4096 for a terabyte of 256 MiB
// segments), not with the bytes they hold. Damage that cannot be a
// crash's torn tail is a *CorruptError (matching isb.ErrCorrupt) naming the
// file: a corrupt, ahead-of-log or off-boundary checkpoint, a missing
// segment inside the retained range, a commit outside the log, or more
// partition directories than the topic is opened with. A record that fails
// its checks when a consumer reads it is returned by Read as a
// *CorruptError too, so the consumer sees an error instead of stalling.
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
// The package is Linux only (flock, msync, madvise).
package mmap
