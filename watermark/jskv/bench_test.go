package jskv_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/watermark"
)

// BenchmarkPut puts a WMB-sized value (22 bytes) through the store beside
// its baselines in the same run, on one embedded server with file storage:
//
//   - jskv: Store.Put (name checks, cached bucket handle, KV put);
//   - kv: jetstream KeyValue.Put into the same bucket (what jskv wraps);
//   - publish: jetstream Publish to a plain stream (what a KV put is).
//
// Each is one synchronous round trip to the server; the ratios show what
// the store adds. The machine's load drifts over seconds, more than the
// store costs, so "interleaved" also runs the three in turn, one put each
// per iteration (in rotating order), timing each put, and reports each
// path's mean and the ratios from the same stretch of time.
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
	b.Run("interleaved", func(b *testing.B) {
		paths := [3]func() error{
			func() error { return store.Put(ctx, bucket, key, value) },
			func() error { _, err := kv.Put(ctx, key, value); return err },
			func() error { _, err := js.Publish(ctx, "raw.wmb.p-0.0", value); return err },
		}
		var spent [3]time.Duration
		n := 0
		for b.Loop() {
			for i := range paths {
				p := (i + n) % len(paths)
				start := time.Now()
				if err := paths[p](); err != nil {
					b.Fatal(err)
				}
				spent[p] += time.Since(start)
			}
			n++
		}
		per := func(p int) float64 { return float64(spent[p].Nanoseconds()) / float64(n) }
		b.ReportMetric(per(0), "jskv-ns/put")
		b.ReportMetric(per(1), "kv-ns/put")
		b.ReportMetric(per(2), "publish-ns/put")
		b.ReportMetric(per(0)/per(1), "jskv/kv")
		b.ReportMetric(per(0)/per(2), "jskv/publish")
	})
}

// BenchmarkPutOverhead measures what jskv itself does per Put (name and
// context checks, the cached bucket handle) on a KeyValue whose Put returns
// at once, beside calling that Put directly.
func BenchmarkPutOverhead(b *testing.B) {
	ctx := context.Background()
	var kv jetstream.KeyValue = instantKV{}
	store := newStore(b, instantJS{kv: kv})
	value := make([]byte, 22)
	const bucket, key = "bench", "wmb.p-0.0"
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := kv.Put(ctx, key, value); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jskv", func(b *testing.B) {
		for b.Loop() {
			if err := store.Put(ctx, bucket, key, value); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// instantJS serves every bucket with its instantKV; the other methods are
// not implemented (calling one panics on the nil embedded interface).
type instantJS struct {
	jetstream.JetStream
	kv jetstream.KeyValue
}

func (j instantJS) KeyValue(context.Context, string) (jetstream.KeyValue, error) { return j.kv, nil }

// instantKV stores nothing and answers at once.
type instantKV struct{ jetstream.KeyValue }

func (instantKV) Put(context.Context, string, []byte) (uint64, error) { return 1, nil }

// BenchmarkPublish is what the data path pays per WMB: Publisher.Publish
// (throttle 0, every call advancing the watermark) into the store on an
// embedded server, the way a forwarder publishes after each write. "put"
// is Store.Put of the same value, the round trip a publish paid while it
// put the WMB itself.
func BenchmarkPublish(b *testing.B) {
	ctx := context.Background()
	_, js := startServer(b).connect()
	store := newStore(b, js)
	const bucket = "bench"
	b.Run("put", func(b *testing.B) {
		value := make([]byte, 22)
		for b.Loop() {
			if err := store.Put(ctx, bucket, "wmb.q-0.0", value); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("publisher", func(b *testing.B) {
		p, err := watermark.NewPublisher(store, watermark.PublisherConfig{
			Processor: "p-0", Edges: []watermark.PublisherEdge{{Bucket: bucket, Partitions: 1}}, Throttle: 0,
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Start(ctx); err != nil {
			b.Fatal(err)
		}
		base := time.Now()
		off := int64(0)
		for b.Loop() {
			if err := p.Publish(bucket, 0, off, base.Add(time.Duration(off)*time.Millisecond)); err != nil {
				b.Fatal(err)
			}
			off++
		}
		b.StopTimer()
		if err := p.Stop(ctx); err != nil {
			b.Fatal(err)
		}
	})
}
