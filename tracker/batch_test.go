package tracker

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The batch calls keep Insert and Delete's contract: a reader's batches
// inserted with InsertBatch and acked in chunks (runs of offsets, or every
// n-th offset as a reduce shard acks), in any order, with
// DeleteBatch (and some with Delete) leave the same lowest offset,
// watermark and length after every step as a model of the in-flight set.
func TestBatchCallsMatchAModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tr := New[struct{}](2)
	type batch struct {
		part int
		offs []int64
		wm   int64
	}
	model := map[[2]int64]int64{} // (partition, offset) -> watermark (s)
	next := []int64{0, 0}
	var open []batch
	check := func(step int) {
		t.Helper()
		for p := range 2 {
			lo, ok := int64(-1), false
			for k := range model {
				if k[0] == int64(p) && (!ok || k[1] < lo) {
					lo, ok = k[1], true
				}
			}
			got, gok := tr.LowestOffset(p)
			if gok != ok || (ok && got != lo) {
				t.Fatalf("step %d partition %d: lowest offset %d,%v; model %d,%v", step, p, got, gok, lo, ok)
			}
		}
		low, ok := int64(0), false
		for _, wm := range model {
			if !ok || wm < low {
				low, ok = wm, true
			}
		}
		// The lowest watermark is that of each partition's lowest offset:
		// watermarks rise with the offsets here, as a reader's do.
		got, gok := tr.LowestWatermark()
		if gok != ok || (ok && got.Unix() != low) {
			t.Fatalf("step %d: lowest watermark %v,%v; model %d,%v", step, got.Unix(), gok, low, ok)
		}
		if tr.Len() != len(model) {
			t.Fatalf("step %d: Len %d, model %d", step, tr.Len(), len(model))
		}
	}
	for step := range 3000 {
		if len(open) < 6 && r.IntN(2) == 0 {
			p := r.IntN(2)
			n := 1 + r.IntN(40)
			b := batch{part: p, wm: next[p]}
			for range n {
				if r.IntN(10) > 0 { // a control message's offset is not tracked
					b.offs = append(b.offs, next[p])
				}
				next[p]++
			}
			if len(b.offs) == 0 {
				continue
			}
			if err := tr.InsertBatch(p, slices.Values(b.offs), time.Unix(b.wm, 0), struct{}{}); err != nil {
				t.Fatal(err)
			}
			for _, o := range b.offs {
				model[[2]int64{int64(p), o}] = b.wm
			}
			open = append(open, b)
		} else if len(open) > 0 {
			i := r.IntN(len(open)) // acks in any order
			b := &open[i]
			var chunk []int64
			if r.IntN(3) == 0 {
				// A reduce shard's chunk: every stride-th offset of the
				// batch, ascending with gaps, some wider than findAfter's
				// scan ahead.
				stride, phase := 1+r.IntN(20), r.IntN(len(b.offs))
				var rest []int64
				for j, o := range b.offs {
					if j >= phase && (j-phase)%stride == 0 {
						chunk = append(chunk, o)
					} else {
						rest = append(rest, o)
					}
				}
				b.offs = rest
			} else {
				k := 1 + r.IntN(len(b.offs))
				lo := r.IntN(len(b.offs) - k + 1)
				chunk = slices.Clone(b.offs[lo : lo+k])
				b.offs = slices.Delete(b.offs, lo, lo+k)
			}
			if r.IntN(4) == 0 {
				for _, o := range chunk {
					tr.Delete(b.part, o)
				}
			} else if n := tr.DeleteBatch(b.part, slices.Values(chunk)); n != len(chunk) {
				t.Fatalf("DeleteBatch removed %d of %d", n, len(chunk))
			}
			for _, o := range chunk {
				delete(model, [2]int64{int64(b.part), o})
			}
			if len(b.offs) == 0 {
				open = slices.Delete(open, i, i+1)
			}
		}
		check(step)
	}
	// Deleting what is not tracked removes nothing; inserting a tracked
	// offset is ErrTracked, and a bad partition ErrPartition.
	if n := tr.DeleteBatch(0, slices.Values([]int64{-5, -6})); n != 0 {
		t.Errorf("DeleteBatch of untracked offsets removed %d", n)
	}
	if err := tr.InsertBatch(0, slices.Values([]int64{next[0], next[0]}), time.Unix(1, 0), struct{}{}); !errors.Is(err, ErrTracked) {
		t.Errorf("InsertBatch of a repeated offset: %v, want ErrTracked", err)
	}
	if err := tr.InsertBatch(7, slices.Values([]int64{1}), time.Time{}, struct{}{}); !errors.Is(err, ErrPartition) {
		t.Errorf("InsertBatch into partition 7: %v, want ErrPartition", err)
	}
}
