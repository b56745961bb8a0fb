package bench

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
	vjetstream "github.com/runnel-dev/runnel/vertex/jetstream"
	vnats "github.com/runnel-dev/runnel/vertex/nats"
)

// natsPayload is every message's data: 100 bytes.
var natsPayload = make([]byte, 100)

// BenchmarkNATSConnectors measures vertex/jetstream and vertex/nats
// against a NATS server with JetStream (file store) embedded in the
// benchmark's process, each beside a raw nats.go loop on the same server
// in the same run:
//
//   - jetstream/source/runnel: vertex/jetstream's Source (a durable
//     consumer created by the source, StopAtEnd) -> blackhole sink, over
//     b.N messages stored beforehand (timer stopped).
//   - jetstream/source/raw: a durable consumer with explicit acks read by
//     Consume (the same pull size, 500), each message acknowledged.
//   - jetstream/sink/runnel: generator -> vertex/jetstream's Sink of b.N
//     messages (async publishes with Nats-Msg-Id, acks awaited per write).
//   - jetstream/sink/raw: PublishMsgAsync of b.N messages, each with a
//     Nats-Msg-Id, then PublishAsyncComplete; raw-headers: the same with
//     the event-time header the sink also writes.
//   - core/source/runnel: vertex/nats's Source (queue of b.N, so nothing
//     is dropped) -> blackhole sink, over b.N messages published by
//     another connection while it runs, until the sink has them all.
//   - core/source/raw: a subscription callback counting the same b.N.
//   - core/sink/runnel: generator -> vertex/nats's Sink of b.N messages,
//     until a subscriber on another connection has them all.
//   - core/sink/raw: b.N publishes and a flush, until the same
//     subscriber has them all; raw-headers: the same with the event-time
//     header the sink writes for a generator's message.
//
// Messages are 100 bytes, runnel's vertices have their default options
// (one replica, batches of 500, 4 writes in flight); every stream is a file stream with a
// duplicate window of 2 minutes.
//
//	cd bench && go test -run '^$' -bench NATSConnectors -benchtime 200000x -count 3
func BenchmarkNATSConnectors(b *testing.B) {
	srv := natstest.Start(b)
	var names atomic.Int64
	// Every call (b.N = 1 first, then the real one) gets streams and
	// subjects of its own.
	newName := func() string { return "b" + strconv.FormatInt(names.Add(1), 10) }
	newStream := func(b *testing.B, js natsjs.JetStream) string {
		name := newName()
		if _, err := js.CreateStream(context.Background(), natsjs.StreamConfig{
			Name: name, Subjects: []string{name}, Storage: natsjs.FileStorage, Duplicates: 2 * time.Minute,
		}); err != nil {
			b.Fatal(err)
		}
		return name
	}
	jsOf := func(b *testing.B, nc *nats.Conn) natsjs.JetStream {
		js, err := natsjs.New(nc, natsjs.WithPublishAsyncMaxPending(rawPublishOutstanding))
		if err != nil {
			b.Fatal(err)
		}
		return js
	}
	// fill stores b.N messages in stream, timer stopped.
	fill := func(b *testing.B, js natsjs.JetStream, stream string) {
		b.StopTimer()
		defer b.StartTimer()
		jsPublish(b, js, stream)
	}

	b.Run("jetstream/source/runnel", func(b *testing.B) {
		nc := srv.Connect()
		js := jsOf(b, nc)
		stream := newStream(b, js)
		fill(b, js, stream)
		src, err := vjetstream.NewSource(context.Background(), vjetstream.SourceConfig{
			Conn: nc, Stream: stream, Durable: "bench", StopAtEnd: true,
		})
		if err != nil {
			b.Fatal(err)
		}
		p := pipeline.New(stream)
		in := pipeline.Source(p, "js", src)
		sink := vertex.Blackhole[[]byte]()
		pipeline.Sink(p, "sink", in, sink)
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		if err := p.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		report(b, start)
		if sink.Count() != int64(b.N) {
			b.Fatalf("sink got %d, want %d", sink.Count(), b.N)
		}
	})
	b.Run("jetstream/source/raw", func(b *testing.B) {
		nc := srv.Connect()
		js := jsOf(b, nc)
		stream := newStream(b, js)
		fill(b, js, stream)
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		cons, err := js.CreateOrUpdateConsumer(context.Background(), stream, natsjs.ConsumerConfig{
			Durable: "bench", AckPolicy: natsjs.AckExplicitPolicy, MaxAckPending: 10000,
		})
		if err != nil {
			b.Fatal(err)
		}
		var n atomic.Int64
		done := make(chan struct{})
		cc, err := cons.Consume(func(m natsjs.Msg) {
			m.Ack()
			if n.Add(1) == int64(b.N) {
				close(done)
			}
		}, natsjs.PullMaxMessages(500))
		if err != nil {
			b.Fatal(err)
		}
		<-done
		cc.Stop()
		report(b, start)
	})
	b.Run("jetstream/sink/runnel", func(b *testing.B) {
		nc := srv.Connect()
		js := jsOf(b, nc)
		stream := newStream(b, js)
		sink, err := vjetstream.NewSink(vjetstream.SinkConfig{Conn: nc, Subject: stream})
		if err != nil {
			b.Fatal(err)
		}
		p := pipeline.New(stream)
		gen := pipeline.Source(p, "gen", vertex.Generator(func(int64) []byte { return natsPayload }).WithCount(int64(b.N)))
		pipeline.Sink(p, "js", gen, sink)
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		if err := p.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		report(b, start)
		jsCheck(b, js, stream)
	})
	b.Run("jetstream/sink/raw", func(b *testing.B) {
		nc := srv.Connect()
		js := jsOf(b, nc)
		stream := newStream(b, js)
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		jsPublish(b, js, stream)
		report(b, start)
		jsCheck(b, js, stream)
	})

	// The raw loop again, each message also with the event-time header
	// the sink adds to a generator's message: the sink's publishes, less
	// the connector.
	b.Run("jetstream/sink/raw-headers", func(b *testing.B) {
		nc := srv.Connect()
		js := jsOf(b, nc)
		stream := newStream(b, js)
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for i := range b.N {
			m := &nats.Msg{Subject: stream, Data: natsPayload, Header: nats.Header{
				natsjs.MsgIDHeader:         []string{"gen-" + strconv.Itoa(i)},
				vjetstream.EventTimeHeader: []string{time.Now().UTC().Format(time.RFC3339Nano)},
			}}
			if _, err := js.PublishMsgAsync(m, natsjs.WithStallWait(time.Minute)); err != nil {
				b.Fatal(err)
			}
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-time.After(time.Minute):
			b.Fatal("publishes not acknowledged within a minute")
		}
		report(b, start)
		jsCheck(b, js, stream)
	})

	b.Run("core/source/runnel", func(b *testing.B) {
		subject := newName()
		src, err := vnats.NewSource(vnats.SourceConfig{Conn: srv.Connect(), Subject: subject, Pending: b.N})
		if err != nil {
			b.Fatal(err)
		}
		p := pipeline.New(subject)
		in := pipeline.Source(p, "nats", src)
		sink := vertex.Blackhole[[]byte]()
		pipeline.Sink(p, "sink", in, sink)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		go func() { done <- p.Run(ctx) }()
		corePublish(b, srv.Connect(), subject)
		for sink.Count()+src.Dropped() < int64(b.N) {
			time.Sleep(time.Millisecond)
		}
		report(b, start)
		b.StopTimer()
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		if d := src.Dropped(); d != 0 {
			b.Fatalf("the source dropped %d", d)
		}
	})
	b.Run("core/source/raw", func(b *testing.B) {
		subject := newName()
		var n atomic.Int64
		done := make(chan struct{})
		sub, err := srv.Connect().Subscribe(subject, func(*nats.Msg) {
			if n.Add(1) == int64(b.N) {
				close(done)
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		sub.SetPendingLimits(-1, -1)
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		corePublish(b, srv.Connect(), subject)
		<-done
		report(b, start)
	})
	b.Run("core/sink/runnel", func(b *testing.B) {
		subject := newName()
		received := coreCount(b, srv.Connect(), subject)
		sink, err := vnats.NewSink(vnats.SinkConfig{Conn: srv.Connect(), Subject: subject})
		if err != nil {
			b.Fatal(err)
		}
		p := pipeline.New(subject)
		gen := pipeline.Source(p, "gen", vertex.Generator(func(int64) []byte { return natsPayload }).WithCount(int64(b.N)))
		pipeline.Sink(p, "nats", gen, sink)
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		if err := p.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		<-received
		report(b, start)
	})
	b.Run("core/sink/raw", func(b *testing.B) {
		subject := newName()
		received := coreCount(b, srv.Connect(), subject)
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		corePublish(b, srv.Connect(), subject)
		<-received
		report(b, start)
	})
	// The raw loop again, each message with the header the sink adds to a
	// generator's message (its event time, vertex/nats.EventTimeHeader):
	// what the mapping costs the publisher and the subscriber, apart from
	// the connector.
	b.Run("core/sink/raw-headers", func(b *testing.B) {
		subject := newName()
		received := coreCount(b, srv.Connect(), subject)
		nc := srv.Connect()
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			m := &nats.Msg{Subject: subject, Data: natsPayload, Header: nats.Header{
				vnats.EventTimeHeader: []string{time.Now().UTC().Format(time.RFC3339Nano)}}}
			if err := nc.PublishMsg(m); err != nil {
				b.Fatal(err)
			}
		}
		if err := nc.Flush(); err != nil {
			b.Fatal(err)
		}
		<-received
		report(b, start)
	})
}

// jsPublish publishes b.N messages of natsPayload to subject
// asynchronously, each with a Nats-Msg-Id, and waits for every
// acknowledgement: the raw publish loop.
func jsPublish(b *testing.B, js natsjs.JetStream, subject string) {
	for i := range b.N {
		m := &nats.Msg{Subject: subject, Data: natsPayload,
			Header: nats.Header{natsjs.MsgIDHeader: []string{"gen-" + strconv.Itoa(i)}}}
		if _, err := js.PublishMsgAsync(m, natsjs.WithStallWait(time.Minute)); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		b.Fatal("publishes not acknowledged within a minute")
	}
}

// jsCheck fails b unless stream holds b.N messages.
func jsCheck(b *testing.B, js natsjs.JetStream, stream string) {
	st, err := js.Stream(context.Background(), stream)
	if err != nil {
		b.Fatal(err)
	}
	if got := st.CachedInfo().State.Msgs; got != uint64(b.N) {
		b.Fatalf("stream holds %d messages, want %d", got, b.N)
	}
}

// corePublish publishes b.N messages of natsPayload to subject on nc and
// flushes: the raw publish loop.
func corePublish(b *testing.B, nc *nats.Conn, subject string) {
	for range b.N {
		if err := nc.Publish(subject, natsPayload); err != nil {
			b.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}
}

// coreCount subscribes to subject on nc and returns a channel closed once
// b.N messages came.
func coreCount(b *testing.B, nc *nats.Conn, subject string) <-chan struct{} {
	var n atomic.Int64
	done := make(chan struct{})
	sub, err := nc.Subscribe(subject, func(*nats.Msg) {
		if n.Add(1) == int64(b.N) {
			close(done)
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	sub.SetPendingLimits(-1, -1)
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}
	return done
}
