package bench

import (
	"context"
	"encoding/binary"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/internal/envelope"
	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/isb/codec"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/pipeline/jsstorage"
	"github.com/runnel-dev/runnel/vertex"
)

// rawPublishOutstanding bounds the raw loop's asynchronous publishes in
// flight, as isb/jetstream's own raw benchmark does.
const rawPublishOutstanding = 4096

// BenchmarkJetStreamPipeline runs generator -> map(identity) -> sink
// (blackhole) for b.N messages on pipeline/jsstorage, against a NATS server
// with JetStream (file store) embedded in the benchmark's process, beside
// the same pipeline on mmap storage and a raw nats.go loop publishing the
// same b.N messages asynchronously with message ids (as the storage does)
// to one file stream. The pipeline writes every message twice (the map's
// buffer and the sink's), so the raw loop stores half of what the pipeline
// stores: it is the floor of one hop, not of the whole pipeline. The
// pipeline runs on packed buffers (jsstorage's default) and on unpacked
// ones (jsstorage.Unpacked), and the raw loop publishes single messages and
// 500-item frames.
//
//	cd bench && go test -run '^$' -bench JetStreamPipeline -benchtime 200000x -count 5
func BenchmarkJetStreamPipeline(b *testing.B) {
	rawInt64, err := codec.Raw[int64]()
	if err != nil {
		b.Fatal(err)
	}
	// internal/natstest: the server of the module's own JetStream tests
	// (file store in a temporary directory, 127.0.0.1, a random port).
	srv := natstest.Start(b)
	b.Run("storage=mmap", func(b *testing.B) {
		benchRunnelMap(b, "bench", nil, pipeline.WithStorage(pipeline.MMap(b.TempDir())), pipeline.WithCodec(rawInt64))
	})
	// Every call (b.N = 1 first, then the real one) runs a pipeline of its
	// own name: the same name would find the first run's source state and
	// run record and resume an ended run.
	var runs atomic.Int64
	b.Run("storage=jetstream", func(b *testing.B) {
		nc := srv.Connect()
		st, err := jsstorage.New(nc, jsstorage.ReduceLogDir(b.TempDir()))
		if err != nil {
			b.Fatal(err)
		}
		name := "bench-" + strconv.FormatInt(runs.Add(1), 10)
		benchRunnelMap(b, name, nil, pipeline.WithStorage(st), pipeline.WithCodec(rawInt64))
	})
	// The same on unpacked buffers (jsstorage.Unpacked: one JetStream
	// message and one id per message).
	b.Run("storage=jetstream-unpacked", func(b *testing.B) {
		nc := srv.Connect()
		st, err := jsstorage.New(nc, jsstorage.ReduceLogDir(b.TempDir()), jsstorage.Unpacked())
		if err != nil {
			b.Fatal(err)
		}
		name := "bench-" + strconv.FormatInt(runs.Add(1), 10)
		benchRunnelMap(b, name, nil, pipeline.WithStorage(st), pipeline.WithCodec(rawInt64))
	})
	// The payload is a generator message's envelope, what the storage
	// publishes per message.
	env := envelope.Codec(rawInt64)
	payload, _ := env.Append(nil, vertex.Message[int64]{ID: "123456", EventTime: time.Now(), Value: 123456})
	b.Run("raw-publish", func(b *testing.B) {
		nc := srv.Connect()
		js, err := natsjs.New(nc, natsjs.WithPublishAsyncMaxPending(rawPublishOutstanding))
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		name := "raw-" + strconv.FormatInt(runs.Add(1), 10)
		if _, err := js.CreateStream(ctx, natsjs.StreamConfig{
			Name: name, Subjects: []string{name}, Storage: natsjs.FileStorage, AllowDirect: true,
			Discard: natsjs.DiscardNew, Duplicates: 2 * time.Minute,
		}); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for i := range b.N {
			m := &nats.Msg{Subject: name, Data: payload,
				Header: nats.Header{natsjs.MsgIDHeader: []string{"gen-" + strconv.Itoa(i)}}}
			if _, err := js.PublishMsgAsync(m, stallWait); err != nil {
				b.Fatal(err)
			}
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-time.After(time.Minute):
			b.Fatal("raw-publish: publishes not acknowledged within a minute")
		}
		report(b, start)
		info, err := js.Stream(ctx, name)
		if err != nil {
			b.Fatal(err)
		}
		if got := info.CachedInfo().State.Msgs; got != uint64(b.N) {
			b.Fatalf("raw-publish: stream holds %d messages, want %d", got, b.N)
		}
	})
	// The same b.N payloads packed rawFrame to a message, each with a
	// 4-byte length before it (what a packed append publishes): the floor
	// of one hop of packed storage.
	b.Run("raw-publish-frames", func(b *testing.B) {
		nc := srv.Connect()
		js, err := natsjs.New(nc, natsjs.WithPublishAsyncMaxPending(rawPublishOutstanding))
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		name := "rawf-" + strconv.FormatInt(runs.Add(1), 10)
		if _, err := js.CreateStream(ctx, natsjs.StreamConfig{
			Name: name, Subjects: []string{name}, Storage: natsjs.FileStorage, AllowDirect: true,
			Discard: natsjs.DiscardNew, Duplicates: 2 * time.Minute,
		}); err != nil {
			b.Fatal(err)
		}
		var frame []byte
		for range rawFrame {
			frame = binary.BigEndian.AppendUint32(frame, uint32(len(payload)))
			frame = append(frame, payload...)
		}
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		frames := 0
		for i := 0; i < b.N; i += rawFrame {
			n := min(rawFrame, b.N-i)
			m := &nats.Msg{Subject: name, Data: frame[:n*(4+len(payload))],
				Header: nats.Header{natsjs.MsgIDHeader: []string{"gen-" + strconv.Itoa(i)}}}
			if _, err := js.PublishMsgAsync(m, stallWait); err != nil {
				b.Fatal(err)
			}
			frames++
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-time.After(time.Minute):
			b.Fatal("raw-publish-frames: publishes not acknowledged within a minute")
		}
		report(b, start)
		info, err := js.Stream(ctx, name)
		if err != nil {
			b.Fatal(err)
		}
		if got := info.CachedInfo().State.Msgs; got != uint64(frames) {
			b.Fatalf("raw-publish-frames: stream holds %d messages, want %d", got, frames)
		}
	})
}

// stallWait lets a raw publish wait for room among the publishes in flight
// instead of failing after nats.go's default 200ms (a loaded machine
// stalled the loop: "too many outstanding async published messages").
var stallWait = natsjs.WithStallWait(time.Minute)

// rawFrame is how many payloads raw-publish-frames packs into a message:
// the pipeline's default read and write batch.
const rawFrame = 500
