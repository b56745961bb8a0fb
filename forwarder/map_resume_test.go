package forwarder

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/runnel-dev/runnel/internal/envelope"
	"github.com/runnel-dev/runnel/internal/origin"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/codec"
	"github.com/runnel-dev/runnel/isb/mmap"
	"github.com/runnel-dev/runnel/vertex"
)

// twoOutputs is a FlatMap giving input v the outputs 10v and 10v+1.
func twoOutputs(_ context.Context, m msg, outs []msg) ([]msg, error) {
	return append(outs, vertex.Derive(m, 10*m.Value), vertex.Derive(m, 10*m.Value+1)), nil
}

// A restarted map writes only the outputs it did not find: of input 0 its
// output 0 was found (a crash cut the input's writes between its two
// outputs), so only output 1 is written; input 1 was found whole, so
// nothing is written and it is acked; input 2 was not found, so both are.
// On durable storage (mmap, which stages the writes) every record written
// carries its origin; on memory storage (written at once) the skip is the
// same.
func TestResumedMapWritesOnlyWhatItDidNotFind(t *testing.T) {
	for _, durable := range []bool{true, false} {
		name := map[bool]string{true: "mmap", false: "memory"}[durable]
		t.Run(name, func(t *testing.T) {
			var out *isb.Topic[msg]
			var log isb.Log[msg]
			if durable {
				b, err := mmap.New[msg](t.TempDir(), mmap.SegmentSize(mmap.MinSegmentSize),
					mmap.WithCodec(envelope.Codec(codec.JSON[int]())))
				if err != nil {
					t.Fatal(err)
				}
				if out, err = isb.NewTopic[msg]("out", b); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = out.Close() })
				log = b.Partition(0)
			} else {
				out = newTopic(t, "out")
			}
			in := newTopic(t, "in")
			if _, err := in.Producer(nil).ProduceTo(context.Background(), 0, values(3)); err != nil {
				t.Fatal(err)
			}
			c, err := in.PullConsumer("m", isb.BatchSize(3), isb.ManualCommit())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()

			retained := map[string]int64{}
			res := &MapResume{
				Vertex: "m", Parts: []int{1},
				Tails: func(dst []int64) { dst[0] = 0 },
				Retain: func(holder string, k int, off int64) error {
					retained[holder] = off
					return out.Retain(holder, k, off)
				},
				Durable: func(int) (int64, error) { return 0, nil },
			}
			for _, f := range []origin.Origin{
				{Writer: "m", Partition: 0, Offset: 0, Index: 0},
				{Writer: "m", Partition: 0, Offset: 1, Index: 1},
				{Writer: "m", Partition: 0, Offset: 1, Index: 0},
				{Writer: "other", Partition: 0, Offset: 2, Index: 0}, // another vertex's record
			} {
				if err := res.Note(0, 0, 7, &f); err != nil {
					t.Fatal(err)
				}
			}
			if outputs, inputs := res.Found(); outputs != 3 || inputs != 2 {
				t.Fatalf("found %d outputs of %d inputs, want 3 of 2", outputs, inputs)
			}
			if err := res.Hold(); err != nil {
				t.Fatal(err)
			}
			if retained["map/m/found"] != 7 {
				t.Fatalf("holds %v: the found records (at offset 7) are not held", retained)
			}

			opts, err := NewOptions(vertex.BatchSize(3), vertex.Concurrency(1))
			if err != nil {
				t.Fatal(err)
			}
			cnt := &Counters{}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- RunResumedMap(ctx, ctx, Config{Vertex: "m", Options: opts, Counters: cnt},
					Input[int]{Consumer: c, Partitions: 1}, []Edge[int]{{To: "out", Topic: out}}, twoOutputs, res)
			}()
			waitFor(t, "3 acks", func() bool { return cnt.Snapshot().Acked == 3 })
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, m := range drain(t, out)[0] {
				got = append(got, m.Value)
			}
			if want := []int{1, 20, 21}; !slices.Equal(got, want) {
				t.Fatalf("written %v, want %v: only the outputs not found", got, want)
			}
			if s := cnt.Snapshot(); s.Written != 3 || s.Dropped != 0 {
				t.Errorf("written %d, dropped %d; want 3, 0 (an output found is neither)", s.Written, s.Dropped)
			}
			if !durable {
				return
			}
			// The records carry their origins, read back as a restart
			// does: into slots the scan sets.
			buf := make([]msg, 3)
			slots := make([]origin.Origin, 3)
			for k := range buf {
				*origin.Of(&buf[k]) = &slots[k]
			}
			if _, _, err := log.Read(context.Background(), 0, 3, buf); err != nil {
				t.Fatal(err)
			}
			want := []origin.Origin{
				{Writer: "m", Partition: 0, Offset: 0, Index: 1},
				{Writer: "m", Partition: 0, Offset: 2, Index: 0},
				{Writer: "m", Partition: 0, Offset: 2, Index: 1},
			}
			if !slices.Equal(slots, want) {
				t.Fatalf("origins %+v, want %+v", slots, want)
			}
		})
	}
}

// A map replica holds what it wrote until the durable commit of its input
// covers it: a batch read registers the output tails, and a commit moves
// the replica's hold to the oldest tails of the batches the durable commit
// does not cover (the tails now when it covers every batch), never down.
// The found records are held until the durable commits pass them.
func TestMapAnchorsFollowDurableCommits(t *testing.T) {
	tails := []int64{10, 100}
	durable := map[int]int64{0: 0, 1: 0}
	holds := map[string][]int64{}
	res := &MapResume{
		Vertex: "m", Parts: []int{2},
		Tails: func(dst []int64) { copy(dst, tails) },
		Retain: func(holder string, k int, off int64) error {
			if holds[holder] == nil {
				holds[holder] = []int64{math.MaxInt64, math.MaxInt64}
			}
			holds[holder][k] = off
			return nil
		},
		Durable: func(p int) (int64, error) { return durable[p], nil },
	}
	if err := res.Note(0, 1, 95, &origin.Origin{Writer: "m", Partition: 1, Offset: 4}); err != nil {
		t.Fatal(err)
	}
	if err := res.Hold(); err != nil {
		t.Fatal(err)
	}
	a, err := newMapAnchors(res, 0)
	if err != nil {
		t.Fatal(err)
	}
	check := func(step string, replica, found []int64) {
		t.Helper()
		if !slices.Equal(holds["map/m/0"], replica) || !slices.Equal(holds["map/m/found"], found) {
			t.Fatalf("%s: replica holds %v, found holds %v; want %v, %v", step, holds["map/m/0"], holds["map/m/found"], replica, found)
		}
	}
	check("start", []int64{10, 100}, []int64{math.MaxInt64, 95})
	a.register(0, 50) // partition 0 up to offset 50, at tails 10, 100
	tails = []int64{20, 130}
	a.register(1, 5) // partition 1 up to 5, at tails 20, 130
	tails = []int64{40, 150}
	commit := func() {
		t.Helper()
		if err := a.committed(); err != nil {
			t.Fatal(err)
		}
	}
	commit()
	check("nothing durable", []int64{10, 100}, []int64{math.MaxInt64, 95})
	durable[0] = 50 // the first batch is durably committed
	commit()
	check("first batch durable", []int64{20, 130}, []int64{math.MaxInt64, 95})
	durable[1] = 5 // the second too, past the found input (offset 4)
	commit()
	check("every batch durable", []int64{40, 150}, []int64{math.MaxInt64, math.MaxInt64})
}
