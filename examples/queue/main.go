// Command queue runs the isb on its own, without a pipeline: several
// producers write orders into a partitioned, bounded topic in memory, routed
// by customer, and two consumer groups read every order independently, one
// with pull consumers and one with a push handler. It prints what each group
// received and checks it: every order exactly once, and each producer's
// orders of one customer in the order they were produced.
//
//	go run ./examples/queue
//
// It ends by itself in well under two seconds; Ctrl-C stops it early and
// cleanly.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/memory"
)

// Order is what the producers write.
type Order struct {
	Customer string
	Producer int
	Seq      int // per producer: 0, 1, 2, ...
}

// config sizes a run.
type config struct {
	producers  int
	perProd    int // orders per producer
	customers  int
	partitions int
	capacity   int64
	timeout    time.Duration // a run that takes longer has failed
}

var defaults = config{producers: 4, perProd: 25_000, customers: 12, partitions: 4, capacity: 4096, timeout: 10 * time.Second}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, defaults, os.Stdout)
	switch {
	case err == nil:
	case ctx.Err() != nil: // Ctrl-C: everything stopped cleanly, report it
		fmt.Fprintln(os.Stderr, "queue: interrupted:", err)
		os.Exit(130)
	default:
		fmt.Fprintln(os.Stderr, "queue:", err)
		os.Exit(1)
	}
}

// streamKey names the orders of one producer for one customer: keyed routing
// keeps them in one partition, so a group must receive them in order.
type streamKey struct {
	producer int
	customer string
}

// tally is what one consumer group received.
type tally struct {
	mu          sync.Mutex
	perPart     []int
	seen        map[[2]int]bool   // (producer, seq) received
	lastSeq     map[streamKey]int // last seq seen of each producer and customer
	duplicates  int
	outOfOrder  int
	total       atomic.Int64
	allReceived chan struct{} // closed when total reaches the expected count
	want        int64
}

func newTally(partitions int, want int64) *tally {
	return &tally{
		perPart:     make([]int, partitions),
		seen:        make(map[[2]int]bool),
		lastSeq:     make(map[streamKey]int),
		allReceived: make(chan struct{}),
		want:        want,
	}
}

// add records a batch. It reads the items during the call: they alias the
// topic's storage and are valid only until the consumer's next pull.
func (t *tally) add(b isb.Batch[Order]) {
	t.mu.Lock()
	t.perPart[b.Partition] += len(b.Items)
	for _, o := range b.Items {
		id := [2]int{o.Producer, o.Seq}
		if t.seen[id] {
			t.duplicates++
		}
		t.seen[id] = true
		key := streamKey{o.Producer, o.Customer}
		if last, ok := t.lastSeq[key]; ok && o.Seq <= last {
			t.outOfOrder++
		}
		t.lastSeq[key] = o.Seq
	}
	t.mu.Unlock()
	// Close on the batch that reaches or passes want: a duplicate can make
	// the count jump past it, and the run must then end with check's
	// report, not wait for its timeout.
	n := int64(len(b.Items))
	if total := t.total.Add(n); total >= t.want && total-n < t.want {
		close(t.allReceived)
	}
}

func (t *tally) check(name string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	if got := int64(len(t.seen)); got != t.want {
		errs = append(errs, fmt.Errorf("group %s: %d distinct orders, want %d", name, got, t.want))
	}
	if t.duplicates > 0 {
		errs = append(errs, fmt.Errorf("group %s: %d duplicates", name, t.duplicates))
	}
	if t.outOfOrder > 0 {
		errs = append(errs, fmt.Errorf("group %s: %d orders out of order", name, t.outOfOrder))
	}
	return errors.Join(errs...)
}

// wait waits until the group has received every order, or ctx ends.
func wait(ctx context.Context, name string, t *tally) error {
	select {
	case <-t.allReceived:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("group %s received %d of %d orders: %w", name, t.total.Load(), t.want, context.Cause(ctx))
	}
}

// run runs the producers and both groups, writes the report to out and
// returns an error if anything was lost, duplicated or reordered, or if ctx
// ended first.
func run(ctx context.Context, cfg config, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	start := time.Now()
	want := int64(cfg.producers * cfg.perProd)

	topic, err := memory.NewTopic[Order]("orders",
		isb.Partitions(cfg.partitions), isb.Capacity(cfg.capacity), isb.WithFullMode(isb.FullWait))
	if err != nil {
		return err
	}
	defer topic.Close()

	// Both groups exist before the first order: capacity is released only
	// when every known group has committed, and each group sees everything.
	billing, audit := newTally(cfg.partitions, want), newTally(cfg.partitions, want)
	pullers, err := topic.PullConsumers("billing", 2, isb.BatchSize(500))
	if err != nil {
		return err
	}
	push, err := topic.Subscribe("audit", func(_ context.Context, b isb.Batch[Order]) error {
		audit.add(b)
		return nil
	}, isb.Consumers(2), isb.BatchSize(500))
	if err != nil {
		return err
	}
	defer push.Stop()

	var wg sync.WaitGroup
	pullCtx, stopPull := context.WithCancel(ctx)
	defer stopPull()
	for _, c := range pullers {
		wg.Go(func() {
			defer c.Close()
			for {
				b, err := c.Pull(pullCtx) // auto commit: commits the previous batch
				if err != nil {
					return // cancelled: everything received, or interrupted
				}
				billing.add(b)
			}
		})
	}

	byCustomer := topic.Producer(isb.ByString(func(o Order) string { return o.Customer }))
	var produced atomic.Int64
	prodErrs := make([]error, cfg.producers)
	var producers sync.WaitGroup
	for p := range cfg.producers {
		producers.Go(func() {
			for s := range cfg.perProd {
				o := Order{Customer: fmt.Sprintf("customer-%02d", (s*7+p)%cfg.customers), Producer: p, Seq: s}
				if err := byCustomer.Produce(ctx, o); err != nil {
					prodErrs[p] = fmt.Errorf("producer %d at order %d: %w", p, s, err)
					return
				}
				produced.Add(1)
			}
		})
	}
	producers.Wait()
	waitErr := errors.Join(wait(ctx, "billing", billing), wait(ctx, "audit", audit))
	stopPull()
	wg.Wait()
	if err := push.Stop(); err != nil {
		return err
	}

	fmt.Fprintf(out, "%d producers wrote %d orders for %d customers into %d partitions (capacity %d) in %v\n",
		cfg.producers, produced.Load(), cfg.customers, cfg.partitions, cfg.capacity, time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(out, "billing (2 pull consumers): %d orders, per partition %v\n", billing.total.Load(), billing.perPart)
	fmt.Fprintf(out, "audit   (2 push handlers):  %d orders, per partition %v\n", audit.total.Load(), audit.perPart)
	if ctx.Err() != nil {
		// Interrupted (or timed out): the counts above are what got through.
		return fmt.Errorf("stopped after %d of %d orders: %w", produced.Load(), want, context.Cause(ctx))
	}
	if err := errors.Join(append(prodErrs, waitErr)...); err != nil {
		return err
	}
	if err := errors.Join(billing.check("billing"), audit.check("audit")); err != nil {
		return err
	}
	if !slices.Equal(billing.perPart, audit.perPart) {
		return fmt.Errorf("groups disagree per partition: billing %v, audit %v", billing.perPart, audit.perPart)
	}
	fmt.Fprintln(out, "ok: both groups received every order once, in order per producer and customer")
	return nil
}
