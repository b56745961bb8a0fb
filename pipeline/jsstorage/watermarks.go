package jsstorage

import (
	"context"
	"iter"

	"github.com/runnel-dev/runnel/watermark"
)

// prefixedStore is the watermark store of one pipeline: the storage's
// store with the pipeline's base before every bucket name. Watermark
// buckets are named by edge and vertex alone (watermark.EdgeBucket), so
// two pipelines with a vertex of the same name would otherwise publish
// into each other's buckets on one server.
type prefixedStore struct {
	store  watermark.Store
	prefix string
}

var _ watermark.Store = prefixedStore{}

func (s prefixedStore) Put(ctx context.Context, bucket, key string, value []byte) error {
	return s.store.Put(ctx, s.prefix+bucket, key, value)
}

func (s prefixedStore) Get(ctx context.Context, bucket, key string) ([]byte, error) {
	return s.store.Get(ctx, s.prefix+bucket, key)
}

func (s prefixedStore) Delete(ctx context.Context, bucket, key string) error {
	return s.store.Delete(ctx, s.prefix+bucket, key)
}

func (s prefixedStore) Watch(ctx context.Context, bucket string) iter.Seq2[watermark.Update, error] {
	return s.store.Watch(ctx, s.prefix+bucket)
}
