package jskv

import (
	"context"
	"errors"
	"fmt"
	"github.com/runnel-dev/runnel/isb"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/watermark"
)

// Store is a [watermark.Store] on JetStream KV. It is safe for concurrent
// use. It does not own the JetStream context or its connection: closing
// them is the caller's, and ends every watch with an error.
type Store struct {
	js  jetstream.JetStream
	cfg config

	mu      sync.Mutex
	buckets map[string]jetstream.KeyValue // guarded by mu: handles of existing buckets
}

var _ watermark.Store = (*Store)(nil)

// New returns a store on js. It checks the options, and talks to the server
// only when a bucket is first used.
func New(js jetstream.JetStream, opts ...Option) (*Store, error) {
	if js == nil {
		return nil, &isb.OptionError{Package: "jskv", Option: "New", Value: nil, Reason: "needs a non-nil JetStream"}
	}
	cfg := defaultConfig()
	for i, o := range opts {
		if o == nil {
			return nil, isb.NilOption("jskv.Option", i, len(opts))
		}
		if err := o.apply(&cfg); err != nil {
			return nil, err
		}
	}
	return &Store{js: js, cfg: cfg, buckets: map[string]jetstream.KeyValue{}}, nil
}

// errNoBucket is what bucket returns, without create, for a bucket that
// does not exist: every key of it is missing.
var errNoBucket = errors.New("bucket does not exist")

// bucket returns the handle of bucket, creating the bucket if create is set
// and it does not exist. Concurrent first uses may each look the bucket up;
// creation is idempotent, and the first handle cached wins.
func (s *Store) bucket(ctx context.Context, bucket string, create bool) (jetstream.KeyValue, error) {
	s.mu.Lock()
	kv := s.buckets[bucket]
	s.mu.Unlock()
	if kv != nil {
		return kv, nil
	}
	kv, err := s.js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		if !create {
			return nil, errNoBucket
		}
		kv, err = s.js.CreateKeyValue(ctx, s.cfg.kvConfig(bucket))
		if errors.Is(err, jetstream.ErrBucketExists) {
			// Created meanwhile with other options (CreateKeyValue succeeds
			// when they are equal): use it as it is.
			kv, err = s.js.KeyValue(ctx, bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("jskv: bucket %q: %w", bucket, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cached := s.buckets[bucket]; cached != nil {
		return cached, nil
	}
	s.buckets[bucket] = kv
	return kv, nil
}

// forget drops the cached handle of bucket when err says its stream is
// gone, so the next use looks it up (and a Put creates it) again.
func (s *Store) forget(bucket string, err error) bool {
	if !errors.Is(err, jetstream.ErrNoStreamResponse) && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return false
	}
	s.mu.Lock()
	delete(s.buckets, bucket)
	s.mu.Unlock()
	return true
}

// Put sets key of bucket to value, creating the bucket on its first use.
// The value is copied before Put returns.
func (s *Store) Put(ctx context.Context, bucket, key string, value []byte) error {
	if err := start(ctx, bucket, key); err != nil {
		return err
	}
	for retried := false; ; retried = true {
		kv, err := s.bucket(ctx, bucket, true)
		if err != nil {
			return err
		}
		_, err = kv.Put(ctx, key, value)
		if err == nil {
			return nil
		}
		if !s.forget(bucket, err) || retried {
			return fmt.Errorf("jskv: put bucket %q key %q: %w", bucket, key, err)
		}
	}
}

// Get returns the value of key; a missing key, or a bucket that does not
// exist, is an error matching watermark.ErrNotFound.
func (s *Store) Get(ctx context.Context, bucket, key string) ([]byte, error) {
	if err := start(ctx, bucket, key); err != nil {
		return nil, err
	}
	kv, err := s.bucket(ctx, bucket, false)
	if errors.Is(err, errNoBucket) {
		return nil, notFound(bucket, key, err)
	}
	if err != nil {
		return nil, err
	}
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, notFound(bucket, key, err)
	}
	if err != nil {
		s.forget(bucket, err)
		return nil, fmt.Errorf("jskv: get bucket %q key %q: %w", bucket, key, err)
	}
	return e.Value(), nil
}

// Delete removes key. It deletes at the revision it read, so only a key
// that exists is deleted (and announced to watchers); when the key changes
// in between, it reads again.
func (s *Store) Delete(ctx context.Context, bucket, key string) error {
	if err := start(ctx, bucket, key); err != nil {
		return err
	}
	kv, err := s.bucket(ctx, bucket, false)
	if errors.Is(err, errNoBucket) {
		return nil
	}
	if err != nil {
		return err
	}
	for {
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		if err == nil {
			err = kv.Delete(ctx, key, jetstream.LastRevision(e.Revision()))
			if err == nil {
				return nil
			}
			if errors.Is(err, jetstream.ErrKeyRevisionMismatch) { // written since the Get
				continue
			}
		}
		s.forget(bucket, err)
		return fmt.Errorf("jskv: delete bucket %q key %q: %w", bucket, key, err)
	}
}

// start checks the names and the context, as every call begins.
func start(ctx context.Context, bucket, key string) error {
	if err := watermark.CheckKey(bucket, key); err != nil {
		return fmt.Errorf("jskv: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("jskv: bucket %q key %q: %w", bucket, key, err)
	}
	return nil
}

func notFound(bucket, key string, cause error) error {
	return fmt.Errorf("jskv: bucket %q key %q: %w (%w)", bucket, key, watermark.ErrNotFound, cause)
}
