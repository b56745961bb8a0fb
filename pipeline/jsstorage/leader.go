package jsstorage

import (
	"context"
	"errors"
	"fmt"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/internal/kvleader"
)

// The state bucket is read from its stream's leader. nats.go's KV Get is a
// direct get, which any replica of a replicated bucket may answer, also one
// that has not applied the latest put yet: a JoinRun could then find the
// record of a run that ended and was replaced, and join it alone (the
// compare-and-set that follows catches a stale record only when it writes).
// isb/jetstream met the same on R3 claims (its freed.go). A message get
// goes to the leader; the state bucket is read once per run and vertex, so
// what it costs does not matter.

// entry is a key's last message in the state bucket.
type entry struct {
	value []byte
	rev   uint64 // the message's sequence: 0 when the key never existed
	live  bool   // false: absent, deleted or purged
}

// bucket binds the state bucket of pipeline p, creating it if needed.
func (s *Storage) bucket(ctx context.Context, p string) (natsjs.KeyValue, error) {
	name, err := bucketName(p, stateSuffix)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	kv := s.buckets[name]
	s.mu.Unlock()
	if kv != nil {
		return kv, nil
	}
	kv, err = s.js.KeyValue(ctx, name)
	if errors.Is(err, natsjs.ErrBucketNotFound) {
		kv, err = s.js.CreateKeyValue(ctx, natsjs.KeyValueConfig{Bucket: name, History: 1,
			Storage: s.cfg.stateStorage, Replicas: s.cfg.stateReplicas,
			Description: fmt.Sprintf("runnel pipeline %q: source states and the run record", p)})
		if errors.Is(err, natsjs.ErrBucketExists) { // created meanwhile, with other settings
			kv, err = s.js.KeyValue(ctx, name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("jsstorage: bucket %q: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cached := s.buckets[name]; cached != nil {
		return cached, nil
	}
	s.buckets[name] = kv
	return kv, nil
}

// read returns key's last message in bucket, from the leader.
func (s *Storage) read(ctx context.Context, bucket, key string) (entry, error) {
	v, rev, live, err := kvleader.Last(ctx, s.legacy, bucket, key)
	return entry{value: v, rev: rev, live: live}, err
}
