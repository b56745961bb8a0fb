package isb

// Batch is what one Pull returns: items of one partition, contiguous from
// Offset.
//
// Items are valid until the consumer's next Pull or Commit, whatever the
// storage: memory storage may hand out its own slice, and durable storage
// (isb/mmap) decodes into a buffer the consumer reuses, so the next Pull
// overwrites Items. Copy what must live longer.
type Batch[T any] struct {
	Partition int
	Offset    int64 // offset of Items[0]
	Items     []T
}

// End is the offset after the last item: CommitTo(b.Partition, b.End())
// commits the whole batch.
func (b Batch[T]) End() int64 { return b.Offset + int64(len(b.Items)) }
