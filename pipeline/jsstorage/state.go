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
	if err := s.request(func(ctx context.Context) error {
		_, err := s.bucket(ctx, p)
		return err
	}); err != nil {
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
	var e entry
	err := st.s.request(func(ctx context.Context) (err error) {
		e, err = st.s.read(ctx, st.bucket, st.key)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("jsstorage: load %s: %w", st, err)
	}
	return e.value, e.live, nil
}

// Save puts b, returning once the server acknowledged it. A put that
// fails for a reason that heals is tried again for up to RetryTimeout; a
// put is idempotent, so one that was stored before its answer was lost
// does no harm when repeated.
func (st *kvState) Save(b []byte) error {
	err := st.s.request(func(ctx context.Context) error {
		kv, err := st.s.bucket(ctx, st.p)
		if err == nil {
			_, err = kv.Put(ctx, st.key, b)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("jsstorage: save %s (%d bytes): %w", st, len(b), err)
	}
	return nil
}
