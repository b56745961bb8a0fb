package watermark

import (
	"context"
	"iter"
)

// Store is the small key-value store with watch that carries WMBs and
// heartbeats: one bucket per edge, keys per processor. [MemStore] is the
// in-process implementation; JetStream KV implements the same contract.
//
// Bucket names use A-Z a-z 0-9 - _; keys also . = / (the JetStream KV
// rules). Buckets exist implicitly: a Get or Watch of a bucket never written
// sees it empty. Values handed out (by Get and Watch) are shared and must not
// be modified; Put copies its value.
type Store interface {
	// Put sets key of bucket to value.
	Put(ctx context.Context, bucket, key string, value []byte) error
	// Get returns the value of key, or an error matching ErrNotFound.
	Get(ctx context.Context, bucket, key string) ([]byte, error)
	// Delete removes key; deleting a missing key is not an error.
	Delete(ctx context.Context, bucket, key string) error
	// Watch yields the current value of every key of bucket (one OpPut
	// each), then one OpSynced, then every later change, in the order the
	// changes were made. A watcher that falls behind may see only the
	// latest change of a key (changes are coalesced per key), never a
	// change out of order. It ends when ctx ends (without error) or when
	// the watch cannot go on: the last pair then carries the error. A
	// store heals inside Watch what heals (a connection that reconnects, a
	// server that restarts), going on from the last change delivered; so
	// an error is final, and a Fetcher fails with it rather than watch
	// again.
	Watch(ctx context.Context, bucket string) iter.Seq2[Update, error]
}

// Op is the kind of an Update.
type Op uint8

const (
	// OpPut: Key now has Value.
	OpPut Op = iota + 1
	// OpDelete: Key was deleted; Value is nil.
	OpDelete
	// OpSynced marks the end of the initial values; Key and Value are empty.
	OpSynced
)

// String names the op for logs.
func (o Op) String() string {
	switch o {
	case OpPut:
		return "put"
	case OpDelete:
		return "delete"
	case OpSynced:
		return "synced"
	}
	return "unknown"
}

// Update is one element of a Watch.
type Update struct {
	Op    Op
	Key   string
	Value []byte
}
