// Package tracker holds a vertex replica's in-flight messages: per
// partition, their offsets with their watermarks, the commit point (the
// lowest offset in flight) and the lowest watermark.
//
// A reader inserts its offsets in ascending order and acks them mostly in
// order, so each partition keeps the entries inserted above everything it
// holds in an append-only slice (an append per insert, a head check or a
// binary search per ack, tombstones for out-of-order acks, compaction once
// the head passes half of it), and only the entries inserted out of order
// in a B-tree. Either way every operation keeps the same contract; the
// reader's path never touches the B-tree.
package tracker
