package kafka

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// A broker that refuses every produce for 2 seconds in the middle of a
// run: the sink answers retry with the cause, the pipeline retries (the
// sink's default, vertex.RemoteRetry) and resumes once the broker takes
// records again; every message reaches the topic, and the log has the
// failures rate-limited: fewer lines than retries.
func TestSinkSurvivesRefusingBroker(t *testing.T) {
	const n = 6000
	c := newCluster(t, 2, "out")
	var refusing atomic.Bool
	refused := refuseProduce(c, func() bool { return refusing.Load() })
	core, logs := observer.New(zapcore.InfoLevel)
	p := pipeline.New("outage", pipeline.WithLogger(zap.New(core)))
	gen := pipeline.Source(p, "gen", vertex.Generator(func(i int64) []byte { return []byte("ID-" + strconv.FormatInt(i, 10)) }).
		WithCount(n).WithRate(1500))
	sink := newTestSink(t, c, SinkConfig{Topic: "out"})
	pipeline.Sink(p, "out", gen, sink, vertex.BatchSize(100))

	// The outage: 2 seconds, once the topic holds 1000 records.
	adm := kadm.NewClient(client(t, c))
	outage := make(chan struct{})
	go func() {
		defer close(outage)
		for {
			ends, err := adm.ListEndOffsets(context.Background(), "out")
			var held int64
			if err == nil {
				ends.Each(func(o kadm.ListedOffset) { held += o.Offset })
			}
			if held >= 1000 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		refusing.Store(true)
		time.Sleep(2 * time.Second)
		refusing.Store(false)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	<-outage
	counts := map[string]int{}
	for _, r := range readAll(t, c, "out") {
		counts[string(r.Value)]++
	}
	dups := 0
	for i := range n {
		got := counts["ID-"+strconv.Itoa(i)]
		if got == 0 {
			t.Fatalf("ID-%d was lost", i)
		}
		dups += got - 1
	}
	var retried int64
	for _, st := range p.Stats() {
		if st.Name == "out" {
			retried = st.Retried
		}
	}
	lines := logs.FilterMessage("sink write failed, retrying").All()
	if refused.Load() == 0 || retried == 0 {
		t.Fatalf("%d produce requests refused, %d retries: the outage did not reach the sink", refused.Load(), retried)
	}
	if len(lines) == 0 || int64(len(lines)) >= retried {
		t.Fatalf("%d failure lines for %d retries, want some, rate-limited", len(lines), retried)
	}
	if cause := lines[0].ContextMap()["error"]; cause == nil {
		t.Errorf("the failure line names no cause: %v", lines[0].ContextMap())
	}
	t.Logf("%d messages through a 2 s outage: %d produce requests refused, %d retries, %d log lines, %d duplicates",
		n, refused.Load(), retried, len(lines), dups)
}

// refuseProduce makes cluster c answer INVALID_RECORD, a refusal the
// client does not retry by itself, for every partition of every produce
// request while refuse says so, and returns the count of requests
// refused.
func refuseProduce(c *kfake.Cluster, refuse func() bool) *atomic.Int64 {
	var refused atomic.Int64
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !refuse() {
			return nil, nil, false
		}
		refused.Add(1)
		pr := req.(*kmsg.ProduceRequest)
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range pr.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.InvalidRecord.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	return &refused
}
