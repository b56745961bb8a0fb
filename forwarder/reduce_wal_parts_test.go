package forwarder

import (
	"context"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/window"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/codec"
	"github.com/runnel-dev/runnel/isb/memory"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/wal"
)

// partsRun is one run of a replica that reads some partitions of a
// two-partition input, each with its own log.
type partsRun struct {
	member, members int           // the replica's consumer in the group
	msgs            map[int][]msg // produced to each partition first (a redelivery repeats earlier offsets)
	end             EndKind
}

// run runs it with the logs in dirs (by partition) and returns the
// results by result ID and the replica's counters.
func (c partsRun) run(t *testing.T, dirs map[int]string) (map[string]int64, Stats) {
	t.Helper()
	ctx := context.Background()
	in := newTopic(t, "in", isb.Partitions(2))
	for p, ms := range c.msgs {
		if _, err := in.Producer(nil).ProduceTo(ctx, p, ms); err != nil {
			t.Fatal(err)
		}
	}
	if err := NewWriter([]Edge[int]{{To: "r", Topic: in}}, &Counters{}, nil, nil).WriteEnd(ctx, "src/0", c.end); err != nil {
		t.Fatal(err)
	}
	out, err := memory.NewTopic[vertex.Message[vertex.Windowed[int64]]]("out")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = out.Close() })
	cons, err := in.JoinGroup("reduce", c.member, c.members, isb.BatchSize(7), isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	logs := map[int]*wal.WAL{}
	for _, p := range cons.Assigned() {
		l, err := wal.Open(dirs[p])
		if err != nil {
			t.Fatal(err)
		}
		logs[p] = l
		defer func() {
			if err := l.Close(); err != nil {
				t.Error(err)
			}
		}()
	}
	opts, err := NewOptions(vertex.BatchSize(7))
	if err != nil {
		t.Fatal(err)
	}
	counters := &Counters{}
	cfg := Config{Vertex: "r", Options: opts, Counters: counters}
	spec := ReduceSpec[int, int64, int64]{Window: vertex.Fixed(time.Second), Reducer: Aggregate(vertex.Counting[int]()),
		Log: &ReduceLog[int]{WALs: logs, Codec: codec.JSON[int]()}}
	if err := RunReduce(ctx, ctx, cfg, Input[int]{Consumer: cons, Partitions: 2, Writers: 1}, []Edge[vertex.Windowed[int64]]{{To: "out", Topic: out}}, spec); err != nil {
		t.Fatalf("RunReduce: %v", err)
	}
	results, _ := splitEnds(readAll(t, out))
	got := map[string]int64{}
	for _, r := range results {
		got[r.ID] = r.Value.Value
	}
	return got, counters.Snapshot()
}

// TestReduceLogsKeepAWatermarkPerPartition: after a rescale a replica may
// read partitions whose logs closed windows at different watermarks. A
// message is judged late at its own partition's (a window emitted for its
// keys is not opened again), never at another partition's (which would
// drop on-time data of a partition that lagged).
func TestReduceLogsKeepAWatermarkPerPartition(t *testing.T) {
	dirs := map[int]string{0: t.TempDir(), 1: t.TempDir()}
	at := func(d time.Duration, key string) msg {
		return msg{ID: key + d.String(), Keys: []string{key}, EventTime: time.Unix(0, int64(d))}
	}
	// Replica 0 of 2 reads partition 0 to its end: window [0, 1s) of "a"
	// is emitted and closed in partition 0's log at 1s.
	first := at(500*time.Millisecond, "a")
	got, _ := partsRun{member: 0, members: 2, msgs: map[int][]msg{0: {first}}, end: Final}.run(t, dirs)
	if len(got) != 1 {
		t.Fatalf("first run: %v, want the one window of a", got)
	}
	// Replica 1 of 2 reads partition 1 and is stopped with nothing.
	if got, _ := (partsRun{member: 1, members: 2, end: Stopped}).run(t, dirs); len(got) != 0 {
		t.Fatalf("second run: %v, want nothing", got)
	}
	// One replica now reads both: partition 0's first message is
	// redelivered (skipped: in the log), its new one for [0, 1s) is late;
	// partition 1's message for [0, 1s) is on time.
	got, stats := partsRun{member: 0, members: 1, msgs: map[int][]msg{
		0: {first, at(600*time.Millisecond, "a")},
		1: {at(700*time.Millisecond, "b")},
	}, end: Final}.run(t, dirs)
	want := resultID("r", window.Interval{Start: 0, End: 1e9}, []string{"b"}, 0)
	if len(got) != 1 || got[want] != 1 || stats.Late != 1 {
		t.Fatalf("after the rescale: results %v and %d late, want {%s: 1} and 1 late", got, stats.Late, want)
	}
}
