package kafka_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex/kafka"
)

// Kafka -> upper-case -> Kafka, on a kfake cluster in the process: the
// source reads what topic "in" holds and ends (StopAtEnd), the sink
// produces to "out" with each record's key.
func Example() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in", "out"))
	if err != nil {
		panic(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("out"))
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	ctx := context.Background()
	for _, w := range []string{"alpha", "beta", "gamma"} {
		cl.ProduceSync(ctx, &kgo.Record{Topic: "in", Key: []byte(w[:1]), Value: []byte(w)})
	}

	src, err := kafka.NewSource(ctx, kafka.SourceConfig{
		Brokers: brokers, Group: "upper", Topics: []string{"in"}, StopAtEnd: true,
	})
	if err != nil {
		panic(err)
	}
	sink, err := kafka.NewSink(kafka.SinkConfig{Brokers: brokers, Topic: "out"})
	if err != nil {
		panic(err)
	}
	p := pipeline.New("upper")
	words := pipeline.Source(p, "in", src)
	upper := pipeline.Map(p, "upper", words, func(_ context.Context, v []byte) ([]byte, error) {
		return bytes.ToUpper(v), nil
	})
	pipeline.Sink(p, "out", upper, sink)
	if err := p.Run(ctx); err != nil { // closes the source and the sink
		panic(err)
	}

	// The map's concurrent calls may reorder the records: print them
	// sorted.
	var lines []string
	for len(lines) < 3 {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			lines = append(lines, fmt.Sprintf("%s %s", r.Key, r.Value))
		})
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// a ALPHA
	// b BETA
	// g GAMMA
}
