package jskv_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkPut puts a WMB-sized value (22 bytes) through the store beside
// its baselines in the same run, on one embedded server with file storage:
//
//   - jskv: Store.Put (name checks, cached bucket handle, KV put);
//   - kv: jetstream KeyValue.Put into the same bucket (what jskv wraps);
//   - publish: jetstream Publish to a plain stream (what a KV put is).
//
// Each is one synchronous round trip to the server; the ratios show what
// the store adds.
func BenchmarkPut(b *testing.B) {
	ctx := context.Background()
	_, js := startServer(b).connect()
	store := newStore(b, js)
	value := make([]byte, 22)
	const bucket, key = "bench", "wmb.p-0.0"
	if err := store.Put(ctx, bucket, key, value); err != nil { // creates the bucket
		b.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "RAW", Subjects: []string{"raw.>"}, Storage: jetstream.FileStorage, MaxMsgsPerSubject: 1,
	}); err != nil {
		b.Fatal(err)
	}

	// Warm every path up before measuring any, so the first measured does
	// not pay for the server's and the connection's start.
	for range 200 {
		if err := store.Put(ctx, bucket, key, value); err != nil {
			b.Fatal(err)
		}
		if _, err := js.Publish(ctx, "raw.wmb.p-0.0", value); err != nil {
			b.Fatal(err)
		}
	}

	b.Run("jskv", func(b *testing.B) {
		for b.Loop() {
			if err := store.Put(ctx, bucket, key, value); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kv", func(b *testing.B) {
		for b.Loop() {
			if _, err := kv.Put(ctx, key, value); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("publish", func(b *testing.B) {
		for b.Loop() {
			if _, err := js.Publish(ctx, "raw.wmb.p-0.0", value); err != nil {
				b.Fatal(err)
			}
		}
	})
}
