package jsstorage

import (
	"context"
	"fmt"

	"github.com/runnel-dev/runnel/pipeline"
)

// SourceState returns the state of source vertex of pipeline p: key
// source.{vertex} of bucket {P}__state (created now if missing). Save is a
// KV put waiting for the server's acknowledgement, Load a read from the
// bucket's leader.
func (s *Storage) SourceState(p, vertex string) (pipeline.StateStore, error) {
	key, err := sourceKey(vertex)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout)
	defer cancel()
	if _, err := s.bucket(ctx, p); err != nil {
		return nil, err
	}
	bucket, _ := bucketName(p, stateSuffix)
	return &kvState{s: s, p: p, bucket: bucket, key: key}, nil
}

// kvState is one source's state: one key of the state bucket.
type kvState struct {
	s         *Storage
	p, bucket string
	key       string
}

var _ pipeline.StateStore = (*kvState)(nil)

// String names the bucket and the key, e.g. "jetstream kv orders__state/source.gen".
func (st *kvState) String() string { return "jetstream kv " + st.bucket + "/" + st.key }

// Load returns the value last saved, or ok false when none was.
func (st *kvState) Load() ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), st.s.cfg.requestTimeout)
	defer cancel()
	e, err := st.s.read(ctx, st.bucket, st.key)
	if err != nil {
		return nil, false, fmt.Errorf("jsstorage: load %s: %w", st, err)
	}
	return e.value, e.live, nil
}

// Save puts b, returning once the server acknowledged it.
func (st *kvState) Save(b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), st.s.cfg.requestTimeout)
	defer cancel()
	kv, err := st.s.bucket(ctx, st.p)
	if err == nil {
		_, err = kv.Put(ctx, st.key, b)
	}
	if err != nil {
		return fmt.Errorf("jsstorage: save %s (%d bytes): %w", st, len(b), err)
	}
	return nil
}
