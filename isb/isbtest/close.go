package isbtest

import (
	"context"
	"errors"
	"testing"

	"github.com/runnel-dev/runnel/isb"
)

// closeWakes: Close wakes a producer waiting for capacity and a consumer
// waiting for items with ErrClosed; every later call fails with ErrClosed.
func (s suite) closeWakes(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t, isb.Partitions(2), isb.Capacity(1))
	pr := tp.Producer(toPartition)
	produce(t, ctx, pr, Item{Producer: 0})
	cs, err := tp.PullConsumers("g", 2)
	if err != nil {
		t.Fatal(err)
	}
	pulled, produced := make(chan error, 1), make(chan error, 1)
	go func() { _, err := cs[1].Pull(ctx); pulled <- err }() // partition 1 is empty
	go func() { produced <- pr.Produce(ctx, Item{Producer: 1}) }()
	waitFor(t, ctx, "the producer queued", func() bool { return tp.Waiting() == 1 })
	h := &handled{handler: func(int, isb.Batch[Item]) error { return nil }}
	push, err := tp.Subscribe("push", h.handle)
	if err != nil {
		t.Fatal(err)
	}

	if err := tp.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-pulled; !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("blocked Pull = %v, want ErrClosed", err)
	}
	if err := <-produced; !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("blocked Produce = %v, want ErrClosed", err)
	}
	if err := push.Stop(); err != nil {
		t.Fatalf("Stop after Close: %v", err)
	}
	if err := tp.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := pr.Produce(ctx, Item{}); !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("Produce after Close = %v, want ErrClosed", err)
	}
	if err := pr.ProduceBatch(ctx, []Item{{}, {}}); !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("ProduceBatch after Close = %v, want ErrClosed", err)
	}
	if ok, err := tp.Producer(nil).TryProduce(ctx, Item{}); ok || !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("TryProduce after Close = %v, %v; want false, ErrClosed", ok, err)
	}
	if _, err := cs[0].Pull(ctx); !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("Pull after Close = %v, want ErrClosed", err)
	}
	if _, err := tp.PullConsumer("h"); !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("PullConsumer after Close = %v, want ErrClosed", err)
	}
	for _, c := range cs {
		if err := c.Close(); err != nil {
			t.Fatalf("consumer Close after topic Close: %v", err)
		}
	}
}

// consumerCloseWakesPull: closing a consumer wakes its blocked Pull with
// ErrClosed and frees the group.
func (s suite) consumerCloseWakesPull(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t)
	c, err := tp.PullConsumer("g")
	if err != nil {
		t.Fatal(err)
	}
	pulled := make(chan error, 1)
	go func() { _, err := c.Pull(ctx); pulled <- err }()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-pulled; !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("Pull on a closing consumer = %v, want ErrClosed", err)
	}
	if _, err := c.Pull(context.Background()); !errors.Is(err, isb.ErrClosed) {
		t.Fatalf("Pull after Close = %v, want ErrClosed", err)
	}
	c2 := consumer(t, tp, "g")
	produce(t, ctx, tp.Producer(nil), Item{Seq: 1})
	expectBatch(t, ctx, c2, 0, 0, []Item{{Seq: 1}})
}
