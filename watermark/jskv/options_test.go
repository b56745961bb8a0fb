package jskv_test

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/watermark"
	"github.com/runnel-dev/runnel/watermark/jskv"
)

func TestNewRefusesBadOptions(t *testing.T) {
	_, js := startServer(t).connect()
	for _, c := range []struct {
		opt  jskv.Option
		want string
	}{
		{jskv.WithHistory(0), "jskv: option WithHistory: a bucket keeps 1 to 64 values per key (got 0)"},
		{jskv.WithHistory(65), "jskv: option WithHistory: a bucket keeps 1 to 64 values per key (got 65)"},
		{jskv.WithTTL(-time.Second), "jskv: option WithTTL: must be 0 (keep keys) or at least 100ms (got -1s)"},
		{jskv.WithTTL(99 * time.Millisecond), "jskv: option WithTTL: must be 0 (keep keys) or at least 100ms (got 99ms)"},
		{jskv.WithReplicas(0), "jskv: option WithReplicas: must be 1 to 5 replicas (got 0)"},
		{jskv.WithReplicas(6), "jskv: option WithReplicas: must be 1 to 5 replicas (got 6)"},
		{jskv.WithStorage(jetstream.StorageType(7)), "jskv: option WithStorage: must be FileStorage or MemoryStorage (got 7)"},
		{nil, "jskv: option jskv.Option: must not be nil (option 2 of 2) (got <nil>)"},
	} {
		s, err := jskv.New(js, jskv.WithHistory(3), c.opt)
		if s != nil || !errors.Is(err, isb.ErrInvalidOption) || err.Error() != c.want {
			t.Errorf("New = %v, %v; want the error %q", s, err, c.want)
		}
	}
	if _, err := jskv.New(nil); !errors.Is(err, jskv.ErrInvalidOption) || err.Error() != "jskv: option New: needs a non-nil JetStream (got <nil>)" {
		t.Errorf("New(nil) = %v", err)
	}
}

// TestBucketsCreatedWithOptions: the first Put creates the bucket with the
// store's options; a Get or Delete of a bucket never written creates
// nothing; a Watch creates it.
func TestBucketsCreatedWithOptions(t *testing.T) {
	ctx := t.Context()
	_, js := startServer(t).connect()
	s := newStore(t, js, jskv.WithHistory(5), jskv.WithTTL(time.Hour), jskv.WithStorage(jetstream.MemoryStorage))
	if err := s.Put(ctx, "b", "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.Config()
	if cfg.History != 5 || cfg.TTL != time.Hour || cfg.Storage != jetstream.MemoryStorage || cfg.Replicas != 1 || st.Values() != 1 {
		t.Fatalf("bucket config history %d ttl %v storage %v replicas %d, %d values; want 5, 1h, memory, 1, 1",
			cfg.History, cfg.TTL, cfg.Storage, cfg.Replicas, st.Values())
	}

	if _, err := s.Get(ctx, "never", "k"); !errors.Is(err, watermark.ErrNotFound) {
		t.Fatalf("Get from a bucket never written: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "never", "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := js.KeyValue(ctx, "never"); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("after Get and Delete, bucket lookup = %v; want ErrBucketNotFound (nothing created)", err)
	}
	for range s.Watch(ctx, "watched") {
		break // the first update (synced) comes once the bucket exists
	}
	if _, err := js.KeyValue(ctx, "watched"); err != nil {
		t.Fatalf("Watch did not create its bucket: %v", err)
	}
}

// TestExistingBucketUsedAsIs: a bucket another process created with other
// options is used, never reconfigured.
func TestExistingBucketUsedAsIs(t *testing.T) {
	ctx := t.Context()
	_, js := startServer(t).connect()
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "b", History: 7}); err != nil {
		t.Fatal(err)
	}
	s := newStore(t, js, jskv.WithHistory(2))
	if err := s.Put(ctx, "b", "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := kv.Status(ctx); err != nil || st.History() != 7 {
		t.Fatalf("history after Put = %v, %v; want the creator's 7", st.History(), err)
	}
	if e, err := kv.Get(ctx, "k"); err != nil || string(e.Value()) != "v" {
		t.Fatalf("the Put did not land in the existing bucket: %v", err)
	}
}
