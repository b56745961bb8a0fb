package isb_test

import (
	"context"
	"testing"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
)

func TestSmoke(t *testing.T) {
	tp, err := isb.NewTopic[int]("smoke", isbtest.NewSliceBackend[int](), isb.Partitions(3), isb.Capacity(10))
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	ctx := context.Background()
	pr := tp.Producer(nil)
	for i := range 10 {
		if err := pr.Produce(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := pr.TryProduce(ctx, 99); ok || err != nil {
		t.Fatal(ok, err)
	}
	c, err := tp.PullConsumer("g", isb.BatchSize(2))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := 0
	for got < 10 {
		b, err := c.Pull(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(b)
		got += len(b.Items)
	}
	c.Commit()
	if tp.Used() != 0 {
		t.Fatal(tp.Used())
	}
	if err := pr.ProduceBatch(ctx, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}); err != nil {
		t.Fatal(err)
	}
}
