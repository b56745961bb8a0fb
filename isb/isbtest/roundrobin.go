package isbtest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/runnel-dev/runnel/isb"
)

// topicRoundRobin: round-robin is the topic's. Its round-robin producers
// share one rotation, item by item and inside batches, in the order items
// are admitted; keyed produces and ProduceTo take no position. The same
// holds with and without capacity (a bounded topic keeps the rotation with
// its capacity, an unbounded one in a counter of its own).
func (s suite) topicRoundRobin(t *testing.T) {
	for _, capacity := range []int64{0, 100} {
		t.Run(fmt.Sprintf("capacity=%d", capacity), func(t *testing.T) {
			ctx := testContext(t)
			tp := s.topic(t, isb.Partitions(3), isb.Capacity(capacity))
			a := tp.Producer(nil)
			b := tp.Producer(isb.RoundRobin[Item]())
			keyed := tp.Producer(toPartition)
			rr := func(i int) Item { return Item{Producer: 9, Seq: i} }
			produce(t, ctx, a, rr(0))                                                       // partition 0
			produce(t, ctx, b, rr(1))                                                       // 1
			produce(t, ctx, keyed, Item{Producer: 2})                                       // 2, no position
			produce(t, ctx, a, rr(2))                                                       // 2
			if err := b.ProduceBatch(ctx, []Item{rr(3), rr(4), rr(5), rr(6)}); err != nil { // 0 1 2 0
				t.Fatal(err)
			}
			if ok, err := a.TryProduce(ctx, rr(7)); !ok || err != nil { // 1
				t.Fatalf("TryProduce = %v, %v", ok, err)
			}
			if _, err := b.ProduceTo(ctx, 0, []Item{{Producer: 0}}); err != nil { // 0, no position
				t.Fatal(err)
			}
			if ok, err := b.TryProduceBatch(ctx, []Item{rr(8), rr(9)}); !ok || err != nil { // 2 0
				t.Fatalf("TryProduceBatch = %v, %v", ok, err)
			}
			produce(t, ctx, a, rr(10)) // 1
			want := [][]Item{
				{rr(0), rr(3), rr(6), {Producer: 0}, rr(9)},
				{rr(1), rr(4), rr(7), rr(10)},
				{{Producer: 2}, rr(2), rr(5), rr(8)},
			}
			c := consumer(t, tp, "g", isb.BatchSize(100))
			got := make([][]Item, 3)
			for n := 0; n < 13; {
				bt := pull(t, ctx, c)
				got[bt.Partition] = append(got[bt.Partition], bt.Items...)
				n += len(bt.Items)
			}
			for p := range want {
				if !slices.Equal(got[p], want[p]) {
					t.Errorf("partition %d holds %v; want %v", p, got[p], want[p])
				}
			}
		})
	}
}
