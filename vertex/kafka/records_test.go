package kafka

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-dev/runnel/vertex"
)

// The IDs toMessages cuts from one string are each record's
// "topic/partition/offset", whatever the digits' lengths, and parse back.
func TestToMessagesIDs(t *testing.T) {
	recs := []*kgo.Record{
		{Topic: "a", Partition: 0, Offset: 0, Value: []byte("v0")},
		{Topic: "a", Partition: 9, Offset: 10, Value: []byte("v1")},
		{Topic: "views.eu", Partition: 12, Offset: 99999, Key: []byte("k"), Timestamp: time.UnixMilli(5)},
		{Topic: "t-1", Partition: math.MaxInt32, Offset: math.MaxInt64},
	}
	msgs := make([]vertex.Message[[]byte], len(recs)+1)
	toMessages(recs, msgs)
	for i, r := range recs {
		want := r.Topic + "/" + strconv.Itoa(int(r.Partition)) + "/" + strconv.FormatInt(r.Offset, 10)
		if msgs[i].ID != want {
			t.Errorf("record %d: ID %q, want %q", i, msgs[i].ID, want)
		}
		topic, p, o, ok := parseID(msgs[i].ID)
		if !ok || topic != r.Topic || p != r.Partition || o != r.Offset {
			t.Errorf("record %d: parseID(%q) = %q %d %d %v", i, msgs[i].ID, topic, p, o, ok)
		}
		if string(msgs[i].Value) != string(r.Value) {
			t.Errorf("record %d: value %q, want %q", i, msgs[i].Value, r.Value)
		}
	}
	if got := msgs[2]; len(got.Keys) != 1 || got.Keys[0] != "k" || !got.EventTime.Equal(time.UnixMilli(5)) {
		t.Errorf("record 2: keys %q, event time %v", got.Keys, got.EventTime)
	}
	if msgs[len(recs)].ID != "" {
		t.Errorf("a message past the records was filled: %+v", msgs[len(recs)])
	}
	toMessages(nil, msgs[:0]) // nothing to fill, no panic
}

// One batch's IDs take one allocation, not one per message.
func TestToMessagesAllocs(t *testing.T) {
	recs := make([]*kgo.Record, 500)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "views", Partition: int32(i % 4), Offset: int64(1_000_000 + i)}
	}
	msgs := make([]vertex.Message[[]byte], len(recs))
	if n := testing.AllocsPerRun(20, func() { toMessages(recs, msgs) }); n > 1 {
		t.Errorf("%v allocations per batch of 500, want 1", n)
	}
}
