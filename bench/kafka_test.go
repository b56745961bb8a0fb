package bench

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/vertex/kafka"
)

// kafkaParts is the partition count of every benchmark topic.
const kafkaParts = 4

// kafkaPayload is every record's value: 100 bytes.
var kafkaPayload = make([]byte, 100)

// BenchmarkKafka measures the Kafka connector on a kfake cluster in the
// benchmark's process, beside a raw franz-go loop on the same cluster in
// the same run:
//
//   - source/runnel: vertex/kafka's Source (StopAtEnd) -> blackhole sink
//     over b.N records produced beforehand (timer stopped); the run joins
//     the group, reads, commits as it acknowledges, and ends at the end.
//   - source/raw: a franz-go group consumer polling the same b.N records
//     (its autocommit on, a final commit), the floor of a consume loop.
//   - sink/runnel: generator -> vertex/kafka's Sink of b.N messages.
//   - sink/raw: franz-go producing b.N records asynchronously with one
//     promise, then Flush: the floor of a produce loop.
//
// Values are 100 bytes, topics have 4 partitions, clients the defaults
// (the idempotent producer included).
//
//	cd bench && go test -run '^$' -bench Kafka -benchtime 1000000x -count 3
func BenchmarkKafka(b *testing.B) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	var topics atomic.Int64
	// Every call (b.N = 1 first, then the real one) gets topics of its own.
	newTopic := func(b *testing.B) string {
		name := "bench-" + strconv.FormatInt(topics.Add(1), 10)
		cl := kafkaClient(b, brokers)
		if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), kafkaParts, 1, nil, name); err != nil {
			b.Fatal(err)
		}
		return name
	}
	b.Run("source/runnel", func(b *testing.B) {
		topic := newTopic(b)
		kafkaFill(b, brokers, topic)
		src, err := kafka.NewSource(context.Background(), kafka.SourceConfig{
			Brokers: brokers, Group: topic, Topics: []string{topic}, StopAtEnd: true,
		})
		if err != nil {
			b.Fatal(err)
		}
		p := pipeline.New(topic)
		in := pipeline.Source(p, "kafka", src)
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
	b.Run("source/raw", func(b *testing.B) {
		topic := newTopic(b)
		kafkaFill(b, brokers, topic)
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		cl := kafkaClient(b, brokers, kgo.ConsumerGroup(topic), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		n := 0
		for n < b.N {
			fs := cl.PollRecords(context.Background(), 500)
			if err := fs.Err0(); err != nil {
				b.Fatal(err)
			}
			n += fs.NumRecords()
		}
		if err := cl.CommitUncommittedOffsets(context.Background()); err != nil {
			b.Fatal(err)
		}
		report(b, start)
		if n != b.N {
			b.Fatalf("read %d, want %d", n, b.N)
		}
	})
	b.Run("sink/runnel", func(b *testing.B) {
		topic := newTopic(b)
		sink, err := kafka.NewSink(kafka.SinkConfig{Brokers: brokers, Topic: topic})
		if err != nil {
			b.Fatal(err)
		}
		p := pipeline.New(topic)
		gen := pipeline.Source(p, "gen", vertex.Generator(func(int64) []byte { return kafkaPayload }).WithCount(int64(b.N)))
		pipeline.Sink(p, "kafka", gen, sink)
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		if err := p.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		report(b, start)
		if n := kafkaCount(b, brokers, topic); n != int64(b.N) {
			b.Fatalf("the topic holds %d records, want %d", n, b.N)
		}
	})
	b.Run("sink/raw", func(b *testing.B) {
		topic := newTopic(b)
		cl := kafkaClient(b, brokers)
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		kafkaProduce(b, cl, topic)
		report(b, start)
		if n := kafkaCount(b, brokers, topic); n != int64(b.N) {
			b.Fatalf("the topic holds %d records, want %d", n, b.N)
		}
	})
}

// kafkaClient makes a franz-go client of brokers with opts, closed when
// the benchmark ends.
func kafkaClient(b *testing.B, brokers []string, opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Close)
	return cl
}

// kafkaProduce produces b.N records of kafkaPayload to topic
// asynchronously and waits for all: the raw produce loop.
func kafkaProduce(b *testing.B, cl *kgo.Client, topic string) {
	var (
		wg   sync.WaitGroup
		once sync.Once
		ferr error
	)
	wg.Add(b.N)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			once.Do(func() { ferr = err })
		}
		wg.Done()
	}
	ctx := context.Background()
	for range b.N {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: kafkaPayload}, promise)
	}
	wg.Wait()
	if ferr != nil {
		b.Fatal(ferr)
	}
}

// kafkaFill produces b.N records to topic, timer stopped.
func kafkaFill(b *testing.B, brokers []string, topic string) {
	b.StopTimer()
	defer b.StartTimer()
	kafkaProduce(b, kafkaClient(b, brokers), topic)
}

// kafkaCount is the number of records topic holds.
func kafkaCount(b *testing.B, brokers []string, topic string) int64 {
	ends, err := kadm.NewClient(kafkaClient(b, brokers)).ListEndOffsets(context.Background(), topic)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n
}
