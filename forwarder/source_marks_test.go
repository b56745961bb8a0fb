package forwarder

import (
	"context"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/watermark"
)

// partedSource reads two partitions of its own: each Read returns the next
// of its batches (IDs "p-i", partition p), then io.EOF.
type partedSource struct {
	mu      sync.Mutex
	batches [][]msg
}

func (s *partedSource) Read(context.Context, int) ([]msg, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.batches) == 0 {
		return nil, io.EOF
	}
	b := s.batches[0]
	s.batches = s.batches[1:]
	return b, nil
}

func (s *partedSource) ReadPartitions() int { return 2 }

func (s *partedSource) PartitionOf(msgs []msg) int {
	p, _, _ := strings.Cut(msgs[0].ID, "-")
	n, _ := strconv.Atoi(p)
	return n
}

// sec returns a batch of n messages of partition p from offset at, the
// event time of offset i being base+i seconds.
func secBatch(p int, at, n int, base int64) []msg {
	b := make([]msg, n)
	for i := range b {
		off := at + i
		b[i] = msg{ID: strconv.Itoa(p) + "-" + strconv.Itoa(off), EventTime: time.Unix(base+int64(off), 0), Value: off}
	}
	return b
}

// onlyObserve hides every method of a watermark.Source but Observe: a
// hook with one watermark per replica, what every source had before
// InputWatermarker.
type onlyObserve struct{ s *watermark.Source }

func (o onlyObserve) Observe(partition int, minEventTime time.Time) time.Time {
	return o.s.Observe(partition, minEventTime)
}

// After a restart a two-partition source resumes each partition from its
// own commit: here its first batch comes from partition 0, 500s of event
// time ahead of partition 1, then partition 1's. With a watermark per
// partition (watermark.Source with two inputs) no message of partition 1
// is late, and no published watermark passes partition 1's position. With
// one watermark for both (a one-input watermark.Source behind a hook with
// Observe alone), partition 0's batch raises it past partition 1's messages,
// which are all judged late: the crash test's wrong window results.
func TestRunSourceWatermarkPerReadPartition(t *testing.T) {
	const delay = 10 * time.Second
	for _, c := range []struct {
		name     string
		perInput bool
	}{{"per partition", true}, {"one watermark", false}} {
		t.Run(c.name, func(t *testing.T) {
			src := &partedSource{batches: [][]msg{
				secBatch(0, 0, 3, 1000), // partition 0, event times 1000..1002s: ahead
				secBatch(1, 0, 3, 500),  // partition 1, 500..502s: behind
				secBatch(0, 3, 3, 1000), // 1003..1005s
				secBatch(1, 3, 3, 500),  // 503..505s
			}}
			inputs := 1
			if c.perInput {
				inputs = 2
			}
			ws, err := watermark.NewSource(watermark.SourceConfig{Partitions: 1, Inputs: inputs, MaxDelay: delay})
			if err != nil {
				t.Fatal(err)
			}
			var hook SourceWatermarker = ws
			if !c.perInput {
				hook = onlyObserve{ws}
			}
			out := newTopic(t, "out")
			pub := &fakePublisher{}
			cfg := Config{Vertex: "src", Options: Options{BatchSize: 10}, Counters: &Counters{},
				Hooks: Hooks{Source: hook, Publisher: pub}}
			if err := RunSource(context.Background(), context.Background(), cfg, vertex.Source[int](src), []Edge[int]{{To: "out", Topic: out}}); err != nil {
				t.Fatal(err)
			}
			got, _ := splitEnd(t, drain(t, out)[0])
			if len(got) != 12 {
				t.Fatalf("wrote %d, want 12", len(got))
			}
			var late []string
			for _, m := range got {
				if m.Late {
					late = append(late, m.ID)
				}
			}
			if !c.perInput {
				// The contrast: the scenario is one that breaks one watermark.
				if len(late) != 6 || !strings.HasPrefix(late[0], "1-") {
					t.Fatalf("one watermark: late %v, want partition 1's 6 messages", late)
				}
				return
			}
			if len(late) != 0 {
				t.Fatalf("late %v, want none", late)
			}
			// Partition 1's position: its newest batch's first event time
			// (503s) - delay; the source's first batch has no watermark yet.
			lagging := time.Unix(503, 0).Add(-delay).Unix()
			if len(pub.calls) != 4 {
				t.Fatalf("publisher calls %v, want one per batch", pub.calls)
			}
			want := []int64{time.Time{}.Unix(), 490, 490, lagging}
			for i, call := range pub.calls {
				if call.wm > lagging {
					t.Errorf("publish %d: watermark %ds passes partition 1's position %ds", i, call.wm, lagging)
				}
				if call.wm != want[i] {
					t.Errorf("publish %d: watermark %ds, want %ds", i, call.wm, want[i])
				}
			}
			for _, m := range got[:3] {
				if !m.Watermark.IsZero() {
					t.Errorf("%s: watermark %v before partition 1 was read, want none", m.ID, m.Watermark)
				}
			}
		})
	}
}
