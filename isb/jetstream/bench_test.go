package jetstream

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/codec"
)

// Baselines and the storage on one embedded server (file storage), in
// one run:
//
//	go test -run '^$' -bench 'Raw|Topic|ReadPath|CommitOp' -benchtime 200000x ./isb/jetstream
//
// Every message is a 64-byte payload. ns/op is per message (per commit for
// CommitOp); msg/s is the same figure inverted. Reads read messages
// published before the timer starts. BenchmarkTopic runs beside BenchmarkRaw
// on the same server, so their ratio is the storage's cost.

const (
	benchPayload     = 64
	benchBatch       = 500
	benchOutstanding = 4096 // async publishes in flight at most
)

type benchEnv struct {
	nc  *nats.Conn
	js  natsjs.JetStream
	ctx context.Context
	n   int // streams made so far, for fresh names
}

func newBenchEnv(b *testing.B) *benchEnv {
	srv := natstest.Start(b)
	nc := srv.Connect()
	js, err := natsjs.New(nc, natsjs.WithPublishAsyncMaxPending(benchOutstanding))
	if err != nil {
		b.Fatal(err)
	}
	return &benchEnv{nc: nc, js: js, ctx: context.Background()}
}

// stream creates a fresh file stream whose only subject is its name.
func (e *benchEnv) stream(b *testing.B) string {
	e.n++
	name := fmt.Sprintf("bench-%d", e.n)
	if _, err := e.js.CreateStream(e.ctx, natsjs.StreamConfig{
		Name: name, Subjects: []string{name}, Storage: natsjs.FileStorage, AllowDirect: true,
		Discard: natsjs.DiscardNew, Duplicates: 2 * time.Minute,
	}); err != nil {
		b.Fatal(err)
	}
	return name
}

// publish publishes n messages asynchronously, with at most
// benchOutstanding in flight, and waits for every acknowledgement; with
// ids each carries a Nats-Msg-Id.
func (e *benchEnv) publish(b *testing.B, stream string, n int, ids bool) {
	payload := make([]byte, benchPayload)
	for i := range n {
		m := &nats.Msg{Subject: stream, Data: payload}
		if ids {
			m.Header = nats.Header{natsjs.MsgIDHeader: []string{"bench-" + strconv.Itoa(i)}}
		}
		if _, err := e.js.PublishMsgAsync(m); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-e.js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		b.Fatal("publishes not acknowledged within a minute")
	}
}

func perSecond(b *testing.B, n int) {
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msg/s")
}

// BenchmarkRaw (with BenchmarkTopic) is the raw nats.go loop the storage is measured against:
// async publish (bounded outstanding, then wait), and a durable pull
// consumer with AckAll read by Fetch or by Messages, acknowledging the
// last message of every batch of 500.
func BenchmarkRaw(b *testing.B) { runRaw(b, newBenchEnv(b)) }

// BenchmarkTopic runs the raw loops and the same work through an
// isb.Topic on this storage (one partition, batches of 500, auto commit)
// on one server, interleaved: raw publish, topic produce, raw consume,
// topic consume.
func BenchmarkTopic(b *testing.B) {
	e := newBenchEnv(b)
	runRaw(b, e)
	runTopic(b, e)
}

func runRaw(b *testing.B, e *benchEnv) {
	for _, ids := range []bool{false, true} {
		b.Run(fmt.Sprintf("publish/msgid=%v", ids), func(b *testing.B) {
			s := e.stream(b)
			b.ResetTimer()
			e.publish(b, s, b.N, ids)
			perSecond(b, b.N)
		})
	}
	b.Run("fetch-ackall", func(b *testing.B) {
		s := e.stream(b)
		e.publish(b, s, b.N, false)
		cons := e.durable(b, s, "fetch")
		b.ResetTimer()
		for got := 0; got < b.N; {
			batch, err := cons.Fetch(benchBatch, natsjs.FetchMaxWait(5*time.Second))
			if err != nil {
				b.Fatal(err)
			}
			var last natsjs.Msg
			for m := range batch.Messages() {
				last = m
				got++
			}
			if batch.Error() != nil {
				b.Fatal(batch.Error())
			}
			if last != nil {
				last.Ack()
			}
		}
		perSecond(b, b.N)
	})
	b.Run("messages-ackall", func(b *testing.B) {
		s := e.stream(b)
		e.publish(b, s, b.N, false)
		cons := e.durable(b, s, "messages")
		b.ResetTimer()
		it, err := cons.Messages(natsjs.PullMaxMessages(benchBatch))
		if err != nil {
			b.Fatal(err)
		}
		defer it.Stop()
		for got := 1; got <= b.N; got++ {
			m, err := it.Next()
			if err != nil {
				b.Fatal(err)
			}
			if got%benchBatch == 0 || got == b.N {
				m.Ack()
			}
		}
		perSecond(b, b.N)
	})
}

func (e *benchEnv) durable(b *testing.B, stream, name string) natsjs.Consumer {
	cons, err := e.js.CreateOrUpdateConsumer(e.ctx, stream, natsjs.ConsumerConfig{
		Durable: name, AckPolicy: natsjs.AckAllPolicy, AckWait: time.Minute, MaxAckPending: -1,
	})
	if err != nil {
		b.Fatal(err)
	}
	return cons
}

// BenchmarkReadPath compares the reads the storage could build on, by
// sequence (the client owns positions): batched direct gets without
// headers (what Read does), the same with headers, and an ordered
// consumer (an ephemeral consumer from a start sequence) read by Fetch.
// The server-owned path is BenchmarkRaw's fetch-ackall.
func BenchmarkReadPath(b *testing.B) {
	e := newBenchEnv(b)
	b.Run("direct-batch", func(b *testing.B) {
		s := e.stream(b)
		e.publish(b, s, b.N, false)
		r, err := newDirectReader(e.nc)
		if err != nil {
			b.Fatal(err)
		}
		defer r.close()
		b.ResetTimer()
		for seq := uint64(1); seq <= uint64(b.N); {
			end, err := r.get(e.ctx, s, seq, min(benchBatch, b.N-int(seq)+1), false, 0)
			if err != nil || end.status != "204" || end.last != seq+uint64(len(end.msgs))-1 {
				b.Fatalf("direct get at %d: %d messages to %d, status %q, %v", seq, len(end.msgs), end.last, end.status, err)
			}
			seq += uint64(len(end.msgs))
		}
		perSecond(b, b.N)
	})
	b.Run("direct-batch-headers", func(b *testing.B) {
		s := e.stream(b)
		e.publish(b, s, b.N, false)
		b.ResetTimer()
		sub, err := e.nc.SubscribeSync(e.nc.NewInbox())
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Unsubscribe()
		for seq := 1; seq <= b.N; {
			req := fmt.Sprintf(`{"seq":%d,"batch":%d}`, seq, min(benchBatch, b.N-seq+1))
			if err := e.nc.PublishRequest(directGetPrefix+s, sub.Subject, []byte(req)); err != nil {
				b.Fatal(err)
			}
			for {
				m, err := sub.NextMsg(5 * time.Second)
				if err != nil {
					b.Fatal(err)
				}
				if len(m.Data) == 0 && m.Header.Get("Status") != "" {
					break
				}
				if _, err := strconv.Atoi(m.Header.Get("Nats-Sequence")); err != nil {
					b.Fatal(err)
				}
				seq++
			}
		}
		perSecond(b, b.N)
	})
	b.Run("ordered-fetch", func(b *testing.B) {
		s := e.stream(b)
		e.publish(b, s, b.N, false)
		cons, err := e.js.OrderedConsumer(e.ctx, s, natsjs.OrderedConsumerConfig{
			DeliverPolicy: natsjs.DeliverByStartSequencePolicy, OptStartSeq: 1,
		})
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for got := 0; got < b.N; {
			batch, err := cons.Fetch(benchBatch, natsjs.FetchMaxWait(5*time.Second))
			if err != nil {
				b.Fatal(err)
			}
			for range batch.Messages() {
				got++
			}
			if batch.Error() != nil {
				b.Fatal(batch.Error())
			}
		}
		perSecond(b, b.N)
	})
}

// BenchmarkCommitOp compares ways to keep a group's commit in the server,
// one synchronous call per op: resetting a durable consumer to the
// sequence after the commit (its ack floor becomes the commit), a KV put
// of the offset, and a synchronous AckAll acknowledgement of a delivered
// message.
func BenchmarkCommitOp(b *testing.B) {
	e := newBenchEnv(b)
	b.Run("consumer-reset", func(b *testing.B) {
		s := e.stream(b)
		e.publish(b, s, b.N+1, false)
		e.durable(b, s, "commits")
		st, err := e.js.Stream(e.ctx, s)
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := range b.N {
			if _, err := st.ResetConsumerToSequence(e.ctx, "commits", uint64(i)+2); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kv-put", func(b *testing.B) {
		kv, err := e.js.CreateKeyValue(e.ctx, natsjs.KeyValueConfig{Bucket: "commits", Storage: natsjs.FileStorage})
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := range b.N {
			if _, err := kv.Put(e.ctx, "s.g", []byte(strconv.Itoa(i))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ack-sync", func(b *testing.B) {
		s := e.stream(b)
		e.publish(b, s, b.N, false)
		cons := e.durable(b, s, "acks")
		it, err := cons.Messages(natsjs.PullMaxMessages(benchBatch))
		if err != nil {
			b.Fatal(err)
		}
		defer it.Stop()
		b.ResetTimer()
		for range b.N {
			m, err := it.Next()
			if err != nil {
				b.Fatal(err)
			}
			if err := m.DoubleAck(e.ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

type rec64 [benchPayload]byte

// topic opens a one-partition topic of rec64 (raw codec: the payload is
// exactly the 64 bytes) on a fresh prefix.
func (e *benchEnv) topic(b *testing.B) (*isb.Topic[rec64], string) {
	e.n++
	c, err := codec.Raw[rec64]()
	if err != nil {
		b.Fatal(err)
	}
	prefix := fmt.Sprintf("topic%d-", e.n)
	tp, err := NewTopic[rec64](e.nc, "bench", WithCodec(c), Prefix(prefix), MaxMsgs(1<<30))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tp.Close() })
	return tp, prefix + "bench-0"
}

func runTopic(b *testing.B, e *benchEnv) {
	for _, producers := range []int{1, 4} {
		b.Run(fmt.Sprintf("topic-produce/goroutines=%d", producers), func(b *testing.B) {
			tp, _ := e.topic(b)
			pr := tp.Producer(nil)
			ctx := context.Background()
			var next atomic.Int64 // batches taken
			var wg sync.WaitGroup
			b.ResetTimer()
			for range producers {
				wg.Go(func() {
					batch := make([]rec64, benchBatch)
					for {
						done := int(next.Add(1)-1) * benchBatch
						if done >= b.N {
							return
						}
						if _, err := pr.ProduceTo(ctx, 0, batch[:min(benchBatch, b.N-done)]); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			perSecond(b, b.N)
		})
	}
	// One goroutine keeping several writes in flight with StageTo, as a
	// pipeline's source does (the contract's deferred Write).
	b.Run("topic-stage/goroutines=1/inflight=4", func(b *testing.B) {
		tp, _ := e.topic(b)
		pr := tp.Producer(nil)
		ctx := context.Background()
		batch := make([]rec64, benchBatch)
		var inflight []isb.Pending[rec64]
		b.ResetTimer()
		for done := 0; done < b.N; done += benchBatch {
			if len(inflight) == 4 {
				if err := inflight[0].Wait(); err != nil {
					b.Fatal(err)
				}
				inflight = inflight[1:]
			}
			w, err := pr.StageTo(ctx, 0, batch[:min(benchBatch, b.N-done)])
			if err != nil {
				b.Fatal(err)
			}
			inflight = append(inflight, w)
		}
		for i := range inflight {
			if err := inflight[i].Wait(); err != nil {
				b.Fatal(err)
			}
		}
		perSecond(b, b.N)
	})
	b.Run("topic-consume", func(b *testing.B) {
		tp, stream := e.topic(b)
		e.publish(b, stream, b.N, true)
		c, err := tp.PullConsumer("g", isb.BatchSize(benchBatch))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		ctx := context.Background()
		b.ResetTimer()
		for got := 0; got < b.N; {
			bt, err := c.Pull(ctx)
			if err != nil {
				b.Fatal(err)
			}
			got += len(bt.Items)
		}
		if err := c.Commit(); err != nil {
			b.Fatal(err)
		}
		perSecond(b, b.N)
	})
}

// BenchmarkAtomicBatch measures what phase 2 could build appends on:
// JetStream's atomic batch publish (AllowAtomicPublish, nats-server 2.12+),
// where a batch of up to 1000 messages is stored all or nothing, at
// contiguous sequences, with one acknowledgement for the commit message.
// Batches of 500, with 1 or 4 batches in flight.
func BenchmarkAtomicBatch(b *testing.B) {
	e := newBenchEnv(b)
	for _, inflight := range []int{1, 4} {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			e.n++
			name := fmt.Sprintf("atomic-%d", e.n)
			if _, err := e.js.CreateStream(e.ctx, natsjs.StreamConfig{
				Name: name, Subjects: []string{name}, Storage: natsjs.FileStorage, AllowDirect: true,
				Discard: natsjs.DiscardNew, Duplicates: 2 * time.Minute, AllowAtomicPublish: true,
			}); err != nil {
				b.Fatal(err)
			}
			acks := make(chan *nats.Msg, inflight)
			sub, err := e.nc.ChanSubscribe(e.nc.NewInbox(), acks)
			if err != nil {
				b.Fatal(err)
			}
			defer sub.Unsubscribe()
			payload := make([]byte, benchPayload)
			wait := func() {
				select {
				case m := <-acks:
					if strings.Contains(string(m.Data), "error") {
						b.Fatalf("batch: %s", m.Data)
					}
				case <-time.After(10 * time.Second):
					b.Fatal("no batch acknowledgement in 10s")
				}
			}
			b.ResetTimer()
			sent := 0
			for batch := 0; batch*benchBatch < b.N; batch++ {
				if batch >= inflight {
					wait()
				}
				id := "b" + strconv.Itoa(batch)
				n := min(benchBatch, b.N-batch*benchBatch)
				for i := 1; i <= n; i++ {
					m := &nats.Msg{Subject: name, Data: payload, Header: nats.Header{
						"Nats-Batch-Id": {id}, "Nats-Batch-Sequence": {strconv.Itoa(i)}}}
					if i == n {
						m.Header["Nats-Batch-Commit"] = []string{"1"}
						m.Reply = sub.Subject
					}
					if err := e.nc.PublishMsg(m); err != nil {
						b.Fatal(err)
					}
				}
				sent++
			}
			for range min(sent, inflight) {
				wait()
			}
			perSecond(b, b.N)
		})
	}
}
