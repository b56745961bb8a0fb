package memory

import (
	"errors"
	"fmt"

	"github.com/runnel-dev/runnel/isb"
)

// Sentinel errors of the memory storage, matched with errors.Is. An offset
// outside what the log holds (below the head, at or past the tail) or one
// released while it was being read is an *OffsetError, matching
// isb.ErrOutOfRange as every storage mode's does.
var (
	// ErrReadSize is returned by a Read asking for fewer than one item.
	ErrReadSize = errors.New("memory: read size must be at least 1")
	// ErrOpened is returned when a Backend is opened a second time: a
	// Backend stores exactly one topic.
	ErrOpened = errors.New("memory: backend already opened")
)

// OffsetError reports an offset a log cannot serve or accept. Its message
// gives the log's retained range [Head, Tail): a read must fall inside it; a
// commit or release may also name Tail itself, never more.
type OffsetError struct {
	Topic     string
	Partition int
	Op        string // "read", "commit" or "release"
	Offset    int64  // the offending offset
	Head      int64  // the log's head when the call was made
	Tail      int64  // the log's tail when the call was made
}

// Error names the topic, partition, operation, offset and retained range.
func (e *OffsetError) Error() string {
	return fmt.Sprintf("memory: topic %q partition %d: %s at offset %d: the log holds [%d, %d)",
		e.Topic, e.Partition, e.Op, e.Offset, e.Head, e.Tail)
}

// Is makes errors.Is(err, isb.ErrOutOfRange) true.
func (e *OffsetError) Is(target error) bool { return target == isb.ErrOutOfRange }
