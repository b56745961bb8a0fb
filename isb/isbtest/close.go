package isbtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	select { // let the Pull block too, so Close wakes it (see consumerCloseWakesPull)
	case err := <-pulled:
		t.Fatalf("Pull of an empty partition returned %v before Close", err)
	case <-time.After(quiet):
	}
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
	// Give the Pull time to block, so Close wakes it rather than finding
	// it not yet started; it must not return on its own meanwhile.
	select {
	case err := <-pulled:
		t.Fatalf("Pull on an empty topic returned %v before Close", err)
	case <-time.After(quiet):
	}
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

// closeUnderLoad closes the topic while producers, consumers and a push
// group run: every call ends with success or ErrClosed, never with a
// storage error from a call racing the storage's Close.
func (s suite) closeUnderLoad(t *testing.T) {
	ctx := testContext(t)
	tp := s.boundedTopic(t, 50, isb.Partitions(3))
	errs := make(chan error, 64)
	check := func(what string, err error) bool {
		if err == nil {
			return true
		}
		if !errors.Is(err, isb.ErrClosed) {
			errs <- fmt.Errorf("%s: %w", what, err)
		}
		return false
	}
	var wg sync.WaitGroup
	pr := tp.Producer(nil)
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; ; seq++ {
				var err error
				if seq%2 == 0 {
					err = pr.Produce(ctx, Item{Producer: p, Seq: seq})
				} else {
					err = pr.ProduceBatch(ctx, seqs(p, seq, 3))
				}
				if !check("produce", err) {
					return
				}
			}
		}()
	}
	cs, err := tp.PullConsumers("pull", 2, isb.ManualCommit(), isb.BatchSize(7))
	if err != nil {
		t.Fatal(err)
	}
	var pulled atomic.Int64
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				b, err := c.Pull(ctx)
				if !check("pull", err) {
					return
				}
				pulled.Add(int64(len(b.Items)))
				if !check("commit", c.CommitTo(b.Partition, b.End())) {
					return
				}
			}
		}()
	}
	h := &handled{handler: func(int, isb.Batch[Item]) error { return nil }}
	push, err := tp.Subscribe("push", h.handle, isb.Consumers(3), isb.OnError(func(_ int, _ int64, err error) {
		check("push", err)
	}))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "items flowing", func() bool { return pulled.Load() > 200 && h.okCount() > 200 })
	if err := tp.Close(); err != nil {
		t.Fatalf("Close under load: %v", err)
	}
	wg.Wait()
	if err := push.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, c := range cs {
		c.Close()
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
