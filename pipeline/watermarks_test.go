package pipeline

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/forwarder"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/memory"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/watermark"
)

func TestWatermarkConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  WatermarkConfig
		want string
	}{
		{WatermarkConfig{MaxDelay: -time.Second}, "MaxDelay"},
		{WatermarkConfig{IdleStep: -1}, "IdleStep"},
		{WatermarkConfig{HeartbeatInterval: time.Second, HeartbeatTimeout: time.Second}, "HeartbeatTimeout"},
	} {
		p := New("bad-wm", Watermarks(tc.cfg))
		Sink(p, "out", Source(p, "src", vertex.FromSlice([]int{1})), vertex.Sink[int](vertex.Blackhole[int]()))
		err := p.Run(context.Background())
		if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: Run = %v, want ErrInvalidOption naming %s", tc.cfg, err, tc.want)
		}
	}
}

// wmSink records each message's watermark and lateness.
type wmSink struct {
	mu   sync.Mutex
	wms  []time.Time
	late int
}

func (s *wmSink) Write(_ context.Context, msgs []vertex.Message[int]) ([]vertex.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		s.wms = append(s.wms, m.Watermark)
		if m.Late {
			s.late++
		}
	}
	return nil, nil
}

// Watermarks are on by default: the source marks a message behind its
// watermark late, and reports in Stats the final watermark (watermark.Max)
// once it is exhausted, as the sink does once the end of stream reached it.
// WatermarkConfig.Disabled turns all of it off.
func TestWatermarksDefaultOnAndOff(t *testing.T) {
	at := func(sec int64) time.Time { return time.Unix(sec, 0) }
	msgs := []vertex.Message[int]{{ID: "a", EventTime: at(100)}, {ID: "b", EventTime: at(200)}, {ID: "late", EventTime: at(150)}}
	for _, off := range []bool{false, true} {
		var opts []Option
		if off {
			opts = append(opts, Watermarks(WatermarkConfig{Disabled: true}))
		}
		p := New("wm-default", opts...)
		sink := &wmSink{}
		// Batches of one: the third message is behind the second's watermark.
		Sink(p, "out", Source(p, "src", vertex.FromMessages(msgs), vertex.BatchSize(1)), vertex.Sink[int](sink))
		runWithin(t, p, 30*time.Second)
		src, out := p.Stats()[0], p.Stats()[1]
		switch {
		case off && (sink.late != 0 || !src.Watermark.IsZero() || !out.Watermark.IsZero()):
			t.Errorf("off: %d late, source watermark %v, sink watermark %v; want none", sink.late, src.Watermark, out.Watermark)
		case !off && (sink.late != 1 || !src.Watermark.Equal(watermark.Max) || !out.Watermark.Equal(watermark.Max)):
			t.Errorf("on: %d late (want 1), source watermark %v, sink watermark %v (want watermark.Max)", sink.late, src.Watermark, out.Watermark)
		}
		for _, wm := range sink.wms {
			if off && !wm.IsZero() || wm.After(at(200)) {
				t.Errorf("off %v: a message carries watermark %v (want none when off, at most 200s when on)", off, wm)
			}
		}
	}
}

// The replica publisher publishes a write's WMB at its offset, marks a
// partition idle after the threshold (one control message, then idle
// WMBs at its offset), and stops once the partition is written again.
func TestReplicaPublisherIdle(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	var clockMu sync.Mutex
	clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
	advance := func(d time.Duration) { clockMu.Lock(); now = now.Add(d); clockMu.Unlock() }
	wm, err := WatermarkConfig{Clock: clock, PartitionIdleThreshold: time.Second, Throttle: time.Nanosecond}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	rt := &runtime{cfg: config{wm: wm}, log: zap.NewNop(), hard: ctx}
	to := &node{name: "b", cfg: forwarder.Options{Partitions: 2}}
	from := &node{name: "a", outs: []outEdge{{to: to}}}
	store := watermark.NewMemStore()
	rp, err := newReplicaPublisher(rt, store, "p", from, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := rp.pub.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rp.pub.Stop(ctx) }()
	bucket, _ := watermark.EdgeBucket("p", "a", "b")
	latest := func(p int) watermark.WMB {
		w, ok := rp.pub.Latest(bucket, p)
		if !ok {
			t.Fatalf("partition %d: no WMB", p)
		}
		return w
	}

	rp.Publish("b", 0, 5, time.Unix(100, 0))
	if w := latest(0); w.Offset != 5 || !w.Watermark.Equal(time.Unix(100, 0)) || w.Idle {
		t.Fatalf("after a write: %v, want offset 5 at 100s, active", w)
	}
	var writes []int
	write := func(_ context.Context, to string, p int) (int64, error) {
		writes = append(writes, p)
		return int64(10 + p), nil
	}
	advance(time.Second)
	if err := rp.Idle(ctx, time.Unix(120, 0), write); err != nil {
		t.Fatal(err)
	}
	if len(writes) != 2 {
		t.Fatalf("control messages to partitions %v, want 0 and 1", writes)
	}
	if err := rp.Idle(ctx, time.Unix(130, 0), write); err != nil {
		t.Fatal(err)
	}
	if w := latest(0); w.Offset != 10 || !w.Watermark.Equal(time.Unix(130, 0)) || !w.Idle {
		t.Fatalf("partition 0 idle: %v, want idle at offset 10, 130s", w)
	}
	if w := latest(1); w.Offset != 11 || !w.Idle {
		t.Fatalf("partition 1 idle: %v, want idle at offset 11", w)
	}
	// Partition 0 turns active: normal WMBs again, no more control messages.
	rp.Publish("b", 0, 12, time.Unix(140, 0))
	if err := rp.Idle(ctx, time.Unix(150, 0), write); err != nil {
		t.Fatal(err)
	}
	if w := latest(0); w.Offset != 12 || w.Idle || !w.Watermark.Equal(time.Unix(140, 0)) {
		t.Fatalf("partition 0 active again: %v, want offset 12 at 140s, active", w)
	}
	if len(writes) != 2 {
		t.Fatalf("control messages %v after the partition turned active, want still 2", writes)
	}
}

// toPartition0 routes every item to partition 0.
type toPartition0 struct{}

func (toPartition0) Route(int, int, uint64) (int, error) { return 0, nil }

// A topic source keeps a watermark per topic partition, shared by its
// replicas; one that has no data at all holds the source back only until a
// read finds nothing in any partition (both were read to their end): here
// partition 1 of the topic is empty, and the source's watermark, the
// lowest of its replicas', still reaches the event time of what partition
// 0 held, also with two replicas, of which one may read nothing at all.
func TestTopicSourceEmptyPartitionDoesNotHoldWatermark(t *testing.T) {
	for _, replicas := range []int{1, 2} {
		t.Run(strconv.Itoa(replicas), func(t *testing.T) { testTopicSourceEmptyPartition(t, replicas) })
	}
}

func testTopicSourceEmptyPartition(t *testing.T, replicas int) {
	topic, err := memory.NewTopic[int]("in", isb.Partitions(2))
	if err != nil {
		t.Fatal(err)
	}
	defer topic.Close()
	if err := topic.Producer(toPartition0{}).ProduceBatch(context.Background(), []int{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	p := New("wm-topic")
	src := vertex.FromTopic(topic, "g").WithPollInterval(10 * time.Millisecond)
	sink := &wmSink{}
	Sink(p, "out", Source(p, "src", src, vertex.Replicas(replicas)), vertex.Sink[int](sink))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := time.Now()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	deadline := time.After(20 * time.Second)
	var wm time.Time
	for wm.IsZero() {
		select {
		case err := <-done:
			t.Fatalf("Run ended early: %v", err)
		case <-deadline:
			t.Fatal("the source watermark stayed unset: the empty partition held it back")
		case <-time.After(5 * time.Millisecond):
		}
		if st := p.Stats(); len(st) > 0 {
			wm = st[0].Watermark
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	// The items' event time is when they were read, and MaxDelay is 0.
	if wm.Before(before) || wm.After(time.Now()) || wm.Equal(watermark.Max) {
		t.Errorf("source watermark %v, want the read time of partition 0's items (after %v)", wm, before)
	}
	if sink.late != 0 || len(sink.wms) != 3 {
		t.Errorf("sink got %d messages, %d late; want 3, none late", len(sink.wms), sink.late)
	}
}
