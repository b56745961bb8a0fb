package isbtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/runnel-dev/runnel/isb"
)

// concurrentAccounting: 8 producers (single items and batches) and three
// groups of 1, 2 and 4 consumers with different commit styles. Every group
// must get every item exactly once, each partition's items of one producer
// in that producer's order, and batches of a partition without a gap.
func (s suite) concurrentAccounting(t *testing.T) {
	const (
		partitions  = 4
		producers   = 8
		perProducer = 1200
		total       = producers * perProducer
	)
	ctx := testContext(t)
	tp := s.topic(t, isb.Partitions(partitions))
	type groupSpec struct {
		name      string
		consumers int
		opts      []isb.ConsumerOption
		commit    func(c *isb.PullConsumer[Item], b isb.Batch[Item]) error
	}
	groups := []groupSpec{
		{"auto", 1, []isb.ConsumerOption{isb.BatchSize(64)}, nil},
		{"manual", 2, []isb.ConsumerOption{isb.BatchSize(7), isb.ManualCommit()},
			func(c *isb.PullConsumer[Item], _ isb.Batch[Item]) error { return c.Commit() }},
		{"commit-to", 4, []isb.ConsumerOption{isb.BatchSize(100), isb.ManualCommit()},
			func(c *isb.PullConsumer[Item], b isb.Batch[Item]) error { return c.CommitTo(b.Partition, b.End()) }},
	}

	// Consumers first, so every group starts at offset 0.
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	received := make([][]Item, len(groups)) // per group, guarded by mu
	var mu sync.Mutex
	for gi, g := range groups {
		cs, err := tp.PullConsumers(g.name, g.consumers, g.opts...)
		if err != nil {
			t.Fatalf("PullConsumers(%q): %v", g.name, err)
		}
		gctx, gcancel := context.WithCancel(ctx)
		var count atomic.Int64
		for _, c := range cs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				next := map[int]int64{}     // partition -> expected batch offset
				lastSeq := map[[2]int]int{} // (partition, producer) -> last seq
				for {
					b, err := c.Pull(gctx)
					if err != nil {
						if gctx.Err() == nil {
							errs <- fmt.Errorf("group %s: Pull: %w", g.name, err)
						}
						return
					}
					if !atOffset(t, b.Offset, next[b.Partition]) {
						errs <- fmt.Errorf("group %s partition %d: batch at offset %d, want %d", g.name, b.Partition, b.Offset, next[b.Partition])
						return
					}
					next[b.Partition] = b.End()
					for _, it := range b.Items {
						k := [2]int{b.Partition, it.Producer}
						if last, ok := lastSeq[k]; ok && it.Seq <= last {
							errs <- fmt.Errorf("group %s partition %d: producer %d seq %d after %d", g.name, b.Partition, it.Producer, it.Seq, last)
							return
						}
						lastSeq[k] = it.Seq
					}
					mu.Lock()
					received[gi] = append(received[gi], b.Items...)
					mu.Unlock()
					if g.commit != nil {
						if err := g.commit(c, b); err != nil {
							errs <- fmt.Errorf("group %s: commit: %w", g.name, err)
							return
						}
					}
					if count.Add(int64(len(b.Items))) >= total {
						gcancel()
					}
				}
			}()
		}
		t.Cleanup(gcancel)
	}

	pr := tp.Producer(nil)
	var pwg sync.WaitGroup
	for p := range producers {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			for seq := 0; seq < perProducer; {
				if seq%3 == 0 { // a batch of 1..17 items
					n := min(1+seq%17, perProducer-seq)
					if err := pr.ProduceBatch(ctx, seqs(p, seq, n)); err != nil {
						errs <- fmt.Errorf("producer %d: ProduceBatch: %w", p, err)
						return
					}
					seq += n
					continue
				}
				if err := pr.Produce(ctx, Item{Producer: p, Seq: seq}); err != nil {
					errs <- fmt.Errorf("producer %d: Produce: %w", p, err)
					return
				}
				seq++
			}
		}()
	}
	pwg.Wait()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	for gi, g := range groups {
		checkExactlyOnce(t, g.name, received[gi], producers, perProducer)
	}
}

// checkExactlyOnce checks that items holds seq 0..perProducer-1 of every
// producer exactly once.
func checkExactlyOnce(t *testing.T, what string, items []Item, producers, perProducer int) {
	t.Helper()
	seen := make(map[[2]int]int, len(items))
	for _, it := range items {
		seen[[2]int{it.Producer, it.Seq}]++
	}
	for p := range producers {
		for seq := range perProducer {
			if n := seen[[2]int{p, seq}]; n != 1 {
				t.Fatalf("%s: producer %d seq %d received %d times, want once", what, p, seq, n)
			}
		}
	}
	if len(items) != producers*perProducer {
		t.Fatalf("%s: received %d items, want %d", what, len(items), producers*perProducer)
	}
}

// capacityNeverExceeded: 32 producers on a small bounded topic while a
// group drains it; Used is sampled all along and must stay within the
// capacity, and every item must arrive once.
func (s suite) capacityNeverExceeded(t *testing.T) {
	const (
		capacity    = 64
		producers   = 32
		perProducer = 150
		total       = producers * perProducer
	)
	ctx := testContext(t)
	tp := s.topic(t, isb.Partitions(4), isb.Capacity(capacity))
	cs, err := tp.PullConsumers("g", 2, isb.BatchSize(16))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		received []Item
		count    atomic.Int64
		wg       sync.WaitGroup
		errs     = make(chan error, producers+4)
	)
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			for count.Load() < total {
				b, err := c.Pull(dctx)
				if err != nil {
					if dctx.Err() == nil {
						errs <- err
					}
					return
				}
				mu.Lock()
				received = append(received, b.Items...)
				mu.Unlock()
				count.Add(int64(len(b.Items)))
			}
			// Commit the last batch, so the capacity ends fully released.
			if err := c.Commit(); err != nil {
				errs <- err
			}
			stop() // wake the other consumer
		}()
	}

	var samples, maxUsed atomic.Int64
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for dctx.Err() == nil {
			u := tp.Used()
			if u < 0 || u > capacity {
				errs <- fmt.Errorf("Used() = %d, outside [0, %d]", u, capacity)
				return
			}
			if u > maxUsed.Load() {
				maxUsed.Store(u)
			}
			samples.Add(1)
		}
	}()

	pr := tp.Producer(nil)
	var pwg sync.WaitGroup
	for p := range producers {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			for seq := 0; seq < perProducer; {
				n := 1 + (p+seq)%8
				if p == 0 && seq == 0 {
					n = 2*capacity + 5 // larger than the capacity: stored in slices
				}
				n = min(n, perProducer-seq)
				var err error
				if n == 1 {
					err = pr.Produce(ctx, Item{Producer: p, Seq: seq})
				} else {
					err = pr.ProduceBatch(ctx, seqs(p, seq, n))
				}
				if err != nil {
					errs <- fmt.Errorf("producer %d: %w", p, err)
					return
				}
				seq += n
			}
		}()
	}
	pwg.Wait()
	wg.Wait()
	<-sampled
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	if samples.Load() == 0 {
		t.Fatal("Used() was never sampled")
	}
	checkExactlyOnce(t, "group g", received, producers, perProducer)
	if u, pending := tp.Used(), tp.Pending("g"); u != 0 || pending != 0 {
		t.Fatalf("after everything was committed: Used() = %d, Pending(g) = %d; want 0 and 0", u, pending)
	}
	t.Logf("%d samples of Used(), max %d of %d", samples.Load(), maxUsed.Load(), capacity)
}

// fifoAdmission: producers queued for capacity are admitted in arrival
// order; a small request never overtakes a larger one queued before it,
// and TryProduce does not overtake the queue either.
func (s suite) fifoAdmission(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t, isb.Capacity(4))
	c := consumer(t, tp, "g", isb.BatchSize(1), isb.ManualCommit())
	pr := tp.Producer(nil)
	produce(t, ctx, pr, seqs(0, 0, 4)...)

	// Queue A (2 items), B (1) and C (3), each after the previous is queued.
	var wg sync.WaitGroup
	done := map[string]chan error{}
	queue := func(name string, items []Item) {
		ch := make(chan error, 1)
		done[name] = ch
		want := tp.Waiting() + 1
		wg.Add(1)
		go func() {
			defer wg.Done()
			ch <- pr.ProduceBatch(ctx, items)
		}()
		waitFor(t, ctx, name+" queued", func() bool { return tp.Waiting() == want })
	}
	t.Cleanup(wg.Wait)
	queue("A", seqs(1, 0, 2))
	queue("B", seqs(2, 0, 1))
	queue("C", seqs(3, 0, 3))

	var got []Item
	release := func(admitted string, waiting int) {
		t.Helper()
		b := pull(t, ctx, c)
		got = append(got, b.Items...)
		if err := c.CommitTo(b.Partition, b.End()); err != nil {
			t.Fatalf("CommitTo: %v", err)
		}
		// Admission happens inside the commit that frees the room.
		if n := tp.Waiting(); n != waiting {
			t.Fatalf("after committing offset %d: %d producers waiting, want %d", b.End(), n, waiting)
		}
		if admitted != "" {
			if err := <-done[admitted]; err != nil {
				t.Fatalf("producer %s: %v", admitted, err)
			}
		}
	}
	release("", 3) // 1 free: A needs 2
	if ok, err := pr.TryProduce(ctx, Item{Producer: 9}); ok || err != nil {
		t.Fatalf("TryProduce with producers queued and room for it = %v, %v; want false, nil", ok, err)
	}
	release("A", 2) // 2 free: A in, 0 free
	release("B", 1) // 1 free: B in, 0 free
	release("", 1)  // 1 free: C needs 3
	release("", 1)  // 2 free
	release("C", 0) // 3 free: C in
	got = append(got, pullItems(t, ctx, c, 4)...)
	want := slices.Concat(seqs(0, 0, 4), seqs(1, 0, 2), seqs(2, 0, 1), seqs(3, 0, 3))
	if !slices.Equal(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
	expectEmpty(t, c)
}

// cancelledWaiter: a producer whose wait is cancelled takes no capacity
// and stores nothing, and the one queued behind it moves up.
func (s suite) cancelledWaiter(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t, isb.Capacity(2))
	c := consumer(t, tp, "g", isb.BatchSize(1), isb.ManualCommit())
	pr := tp.Producer(nil)
	produce(t, ctx, pr, seqs(0, 0, 2)...)

	actx, cancelA := context.WithCancel(ctx)
	errA, errB := make(chan error, 1), make(chan error, 1)
	go func() { errA <- pr.ProduceBatch(actx, seqs(1, 0, 2)) }()
	waitFor(t, ctx, "A queued", func() bool { return tp.Waiting() == 1 })
	go func() { errB <- pr.Produce(ctx, Item{Producer: 2}) }()
	waitFor(t, ctx, "B queued", func() bool { return tp.Waiting() == 2 })

	cancelA()
	if err := <-errA; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ProduceBatch = %v, want context.Canceled", err)
	}
	if n, u := tp.Waiting(), tp.Used(); n != 1 || u != 2 {
		t.Fatalf("after the cancel: %d waiting, Used() = %d; want 1 and 2", n, u)
	}
	b := pull(t, ctx, c)
	if err := c.CommitTo(b.Partition, b.End()); err != nil {
		t.Fatal(err)
	}
	if err := <-errB; err != nil {
		t.Fatalf("B: %v", err)
	}
	got := append(b.Items, pullItems(t, ctx, c, 2)...)
	want := []Item{{Producer: 0, Seq: 0}, {Producer: 0, Seq: 1}, {Producer: 2}}
	if !slices.Equal(got, want) {
		t.Fatalf("stored %v, want %v (nothing of the cancelled batch)", got, want)
	}
	expectEmpty(t, c)
	if u := tp.Used(); u != 2 {
		t.Fatalf("Used() = %d, want 2", u)
	}
}

// failBatchRules: under FullFail a batch that does not fit, or is larger
// than the capacity, is rejected whole with ErrFull; Try* report false.
func (s suite) failBatchRules(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t, isb.Partitions(2), isb.Capacity(5), isb.WithFullMode(isb.FullFail))
	pr := tp.Producer(nil)
	expectUsed := func(want int64) {
		t.Helper()
		if u := tp.Used(); u != want {
			t.Fatalf("Used() = %d, want %d", u, want)
		}
	}
	if err := pr.ProduceBatch(ctx, seqs(0, 0, 6)); !errors.Is(err, isb.ErrFull) {
		t.Fatalf("batch of 6 on capacity 5 = %v, want ErrFull", err)
	}
	expectUsed(0)
	if err := pr.ProduceBatch(ctx, seqs(1, 0, 3)); err != nil {
		t.Fatal(err)
	}
	if err := pr.ProduceBatch(ctx, seqs(2, 0, 3)); !errors.Is(err, isb.ErrFull) {
		t.Fatalf("batch of 3 with 2 free = %v, want ErrFull", err)
	}
	expectUsed(3)
	if ok, err := pr.TryProduceBatch(ctx, seqs(2, 0, 3)); ok || err != nil {
		t.Fatalf("TryProduceBatch of 3 with 2 free = %v, %v; want false, nil", ok, err)
	}
	if ok, err := pr.TryProduceBatch(ctx, seqs(3, 0, 6)); ok || err != nil {
		t.Fatalf("TryProduceBatch larger than the capacity = %v, %v; want false, nil", ok, err)
	}
	produce(t, ctx, pr, Item{Producer: 4, Seq: 0}, Item{Producer: 4, Seq: 1})
	expectUsed(5)
	if err := pr.Produce(ctx, Item{Producer: 4, Seq: 2}); !errors.Is(err, isb.ErrFull) {
		t.Fatalf("Produce on a full topic = %v, want ErrFull", err)
	}
	if ok, err := pr.TryProduce(ctx, Item{Producer: 4, Seq: 2}); ok || err != nil {
		t.Fatalf("TryProduce on a full topic = %v, %v; want false, nil", ok, err)
	}
	expectUsed(5)

	// Exactly what was accepted is stored.
	c := consumer(t, tp, "g")
	got := pullItems(t, ctx, c, 5)
	sortItems(got)
	want := slices.Concat(seqs(1, 0, 3), seqs(4, 0, 2))
	if !slices.Equal(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
	expectEmpty(t, c) // commits the last batch (auto commit)
	expectUsed(0)
	// Committing freed room for a whole batch again.
	if ok, err := pr.TryProduceBatch(ctx, seqs(5, 0, 5)); !ok || err != nil {
		t.Fatalf("TryProduceBatch of 5 on an empty topic = %v, %v; want true, nil", ok, err)
	}
	expectUsed(5)
}

// waitBatchRules: under FullWait a batch larger than the capacity is stored
// in capacity-sized slices as room is released; a cancelled wait keeps the
// slices already stored and nothing else.
func (s suite) waitBatchRules(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t, isb.Capacity(5))
	pr := tp.Producer(nil)
	c := consumer(t, tp, "g", isb.BatchSize(3))

	// No one consumes: the first slice fits, the second waits until it is
	// cancelled.
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- pr.ProduceBatch(cctx, seqs(0, 0, 12)) }()
	waitFor(t, ctx, "the second slice queued", func() bool { return tp.Waiting() == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("oversized batch with no consumer = %v, want context.Canceled", err)
	}
	if u := tp.Used(); u != 5 {
		t.Fatalf("Used() = %d, want 5 (the first slice)", u)
	}
	if ok, err := pr.TryProduceBatch(ctx, seqs(1, 0, 6)); ok || err != nil {
		t.Fatalf("TryProduceBatch larger than the capacity = %v, %v; want false, nil", ok, err)
	}
	got := pullItems(t, ctx, c, 5)
	if want := seqs(0, 0, 5); !slices.Equal(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
	expectEmpty(t, c) // also commits (auto) everything pulled

	// With a consumer draining, the whole oversized batch goes through.
	go func() { errc <- pr.ProduceBatch(ctx, seqs(2, 0, 12)) }()
	got = pullItems(t, ctx, c, 12)
	if err := <-errc; err != nil {
		t.Fatalf("oversized batch with a consumer: %v", err)
	}
	if want := seqs(2, 0, 12); !slices.Equal(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
}

// numericKeys routes by number end to end: keys 1..n go to partitions
// 0..n-1, zero and negative keys wrap, extremes do not overflow, and NaN,
// infinities and fractions are rejected without storing anything.
func (s suite) numericKeys(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t, isb.Partitions(4))
	type route struct {
		key  any
		part int
	}
	routes := []route{
		{int64(1), 0}, {int64(2), 1}, {int64(3), 2}, {int64(4), 3}, {int64(5), 0},
		{int64(0), 3}, {int64(-1), 2}, {int64(-2), 1}, {int64(-3), 0}, {int64(-4), 3},
		{int64(math.MinInt64), 3}, {int64(math.MaxInt64), 2},
		{uint64(math.MaxUint64), 2}, {uint64(1 << 63), 3}, {uint64(1), 0},
		{float64(1), 0}, {float64(0), 3}, {math.Copysign(0, -1), 3}, {float64(-1), 2}, {1e18, 3},
	}
	// One producer per key type; Seq indexes routes.
	ints := tp.Producer(isb.ByNumber(func(it Item) int64 { return routes[it.Seq].key.(int64) }))
	uints := tp.Producer(isb.ByNumber(func(it Item) uint64 { return routes[it.Seq].key.(uint64) }))
	floats := tp.Producer(isb.ByNumber(func(it Item) float64 { return routes[it.Seq].key.(float64) }))
	for i, r := range routes {
		pr := ints
		switch r.key.(type) {
		case uint64:
			pr = uints
		case float64:
			pr = floats
		}
		produce(t, ctx, pr, Item{Seq: i})
	}

	bad := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1.5, -0.5}
	badKeys := tp.Producer(isb.ByNumber(func(it Item) float64 { return bad[it.Seq] }))
	for i, k := range bad {
		err := badKeys.Produce(ctx, Item{Seq: i})
		if !errors.Is(err, isb.ErrInvalidKey) || !strings.Contains(err.Error(), fmt.Sprint(k)) {
			t.Fatalf("key %v: error %v, want ErrInvalidKey naming the key", k, err)
		}
	}
	// One bad key rejects the whole batch.
	mixed := tp.Producer(isb.ByNumber(func(it Item) float64 {
		if it.Producer == 1 {
			return math.NaN()
		}
		return 1
	}))
	if err := mixed.ProduceBatch(ctx, []Item{{Seq: 100}, {Seq: 101}, {Producer: 1, Seq: 102}}); !errors.Is(err, isb.ErrInvalidKey) {
		t.Fatalf("batch with a NaN key = %v, want ErrInvalidKey", err)
	}

	c := consumer(t, tp, "g", isb.BatchSize(100))
	got := make(map[int]int) // seq -> partition
	for len(got) < len(routes) {
		b := pull(t, ctx, c)
		for _, it := range b.Items {
			if _, dup := got[it.Seq]; dup || it.Seq >= len(routes) {
				t.Fatalf("unexpected item %v in partition %d", it, b.Partition)
			}
			got[it.Seq] = b.Partition
		}
	}
	for i, r := range routes {
		if got[i] != r.part {
			t.Errorf("key %v (%T) went to partition %d, want %d", r.key, r.key, got[i], r.part)
		}
	}
	expectEmpty(t, c)
}

// stringKeys routes by string end to end: every item lands on the
// partition ByString gives its key (the pinned table lives in the isb
// tests), items of one key keep their order, and keys spread.
func (s suite) stringKeys(t *testing.T) {
	ctx := testContext(t)
	const partitions = 8
	tp := s.topic(t, isb.Partitions(partitions))
	router := isb.ByString(func(it Item) string { return it.Key })
	pr := tp.Producer(router)
	keys := []string{"", "a", "b", "0", "order-1", "order-2", "user:42", "héllo", "the quick brown fox", "runnel"}
	var batch []Item
	for seq := range 5 {
		for p, k := range keys {
			batch = append(batch, Item{Producer: p, Seq: seq, Key: k})
		}
	}
	if err := pr.ProduceBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	c := consumer(t, tp, "g")
	used := map[int]bool{}
	lastSeq := map[string]int{}
	for n := 0; n < len(batch); {
		b := pull(t, ctx, c)
		n += len(b.Items)
		for _, it := range b.Items {
			want, err := router.Route(it, partitions, 0)
			if err != nil || want != b.Partition {
				t.Fatalf("key %q in partition %d, ByString says %d (%v)", it.Key, b.Partition, want, err)
			}
			if last, ok := lastSeq[it.Key]; ok && it.Seq != last+1 || !ok && it.Seq != 0 {
				t.Fatalf("key %q: seq %d after %d", it.Key, it.Seq, last)
			}
			lastSeq[it.Key] = it.Seq
			used[b.Partition] = true
		}
	}
	if len(used) < 4 {
		t.Fatalf("%d keys used only partitions %v", len(keys), used)
	}
}

// selectorOutOfRange: a selector result outside [0, n) is an error naming
// the result and n, and nothing is stored.
func (s suite) selectorOutOfRange(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t, isb.Partitions(3))
	for _, p := range []int{-1, 3, 100} {
		err := tp.Producer(toPartition).Produce(ctx, Item{Producer: p})
		if !errors.Is(err, isb.ErrInvalidKey) || !strings.Contains(err.Error(), fmt.Sprint(p)) || !strings.Contains(err.Error(), "3") {
			t.Fatalf("selector result %d: error %v, want ErrInvalidKey naming %d and 3", p, err, p)
		}
	}
	if n := tp.Pending("g"); n != 0 {
		t.Fatalf("%d items stored, want 0", n)
	}
}

// sortItems orders items by producer, then seq.
func sortItems(items []Item) {
	slices.SortFunc(items, func(a, b Item) int {
		if a.Producer != b.Producer {
			return a.Producer - b.Producer
		}
		return a.Seq - b.Seq
	})
}

// produceToOffsets: ProduceTo stores in the partition asked for and
// returns the offset of the last item, as the storage numbered it.
func (s suite) produceToOffsets(t *testing.T) {
	ctx := testContext(t)
	tp := s.boundedTopic(t, 20, isb.Partitions(2))
	pr := tp.Producer(nil)
	type write struct {
		part  int
		items []Item
		last  int64
	}
	writes := []write{
		{1, seqs(1, 0, 3), 2},
		{0, seqs(0, 0, 1), 0},
		{1, seqs(1, 3, 2), 4},
	}
	prev := map[int]int64{0: -1, 1: -1}
	for _, w := range writes {
		last, err := pr.ProduceTo(ctx, w.part, w.items)
		if err != nil || !atOffset(t, last, w.last) || last < prev[w.part]+int64(len(w.items)) {
			t.Fatalf("ProduceTo(%d, %d items) = %d, %v; want %d", w.part, len(w.items), last, err, w.last)
		}
		prev[w.part] = last
	}
	if last, ok, err := pr.TryProduceTo(ctx, 0, seqs(0, 1, 2)); !ok || err != nil || !atOffset(t, last, 2) || last < prev[0]+2 {
		t.Fatalf("TryProduceTo = %d, %v, %v; want 2, true, nil", last, ok, err)
	}
	if _, err := pr.ProduceTo(ctx, 2, seqs(9, 0, 1)); !errors.Is(err, isb.ErrInvalidKey) {
		t.Fatalf("ProduceTo partition 2 of 2 = %v, want ErrInvalidKey", err)
	}
	cs, err := tp.PullConsumers("g", 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs[0].Close(); cs[1].Close() })
	expectItems(t, ctx, cs[0], 0, 0, seqs(0, 0, 3))
	expectItems(t, ctx, cs[1], 1, 0, seqs(1, 0, 5))
}
