package kafka

import (
	"context"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/runnel-dev/runnel/internal/crashtest"
)

func TestMain(m *testing.M) {
	// The crash test re-executes this binary as its child (crash_test.go).
	if crashtest.RunChild(map[string]func(){"kafka-crash": crashChild}) {
		return
	}
	goleak.VerifyTestMain(m)
}

// testGroupOpts make a test's group members notice a rebalance, and the
// cluster drop a member that died, within a fraction of a second instead
// of seconds (kfake's cluster lets a session be that short:
// newCluster).
var testGroupOpts = []kgo.Opt{
	kgo.HeartbeatInterval(50 * time.Millisecond),
	kgo.SessionTimeout(1500 * time.Millisecond),
	kgo.RebalanceTimeout(5 * time.Second),
}

// newCluster starts a kfake cluster of one broker with the given topics of
// parts partitions each, closed when the test ends.
func newCluster(t testing.TB, parts int32, topics ...string) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(parts, topics...),
		kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// client makes a plain franz-go client of the cluster, closed when the
// test ends.
func client(t testing.TB, c *kfake.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceIDs produces the records "id-i" for i in [from, to) to topic,
// keyed by i mod keys, each with the header "n": i, and waits for all.
func produceIDs(t testing.TB, cl *kgo.Client, topic string, from, to, keys int) {
	t.Helper()
	recs := make([]*kgo.Record, 0, to-from)
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{
			Topic:   topic,
			Key:     []byte("k" + strconv.Itoa(i%keys)),
			Value:   []byte("id-" + strconv.Itoa(i)),
			Headers: []kgo.RecordHeader{{Key: "n", Value: []byte(strconv.Itoa(i))}},
		})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// readAll reads topic from its start to the end offsets it has now, with
// a plain consumer, and returns its records in partition and offset
// order.
func readAll(t testing.TB, c *kfake.Cluster, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(client(t, c))
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	total := int64(0)
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset; total += o.Offset })
	cl := client(t, c, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []*kgo.Record
	for int64(len(out)) < total {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of the %d records of %q: %v", len(out), total, topic, err)
		}
		out = append(out, fs.Records()...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Offset < out[j].Offset
	})
	return out
}

// committed returns the group's committed offset of each partition of
// topic (absent: none).
func committed(t testing.TB, c *kfake.Cluster, group, topic string) map[int32]int64 {
	t.Helper()
	offs, err := kadm.NewClient(client(t, c)).FetchOffsets(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.At >= 0 {
			out[o.Partition] = o.At
		}
	})
	return out
}

// waitFor polls cond every 10ms until it holds or timeout passes, and
// fails the test then, saying what.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
