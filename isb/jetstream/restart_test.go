package jetstream_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
	"github.com/runnel-dev/runnel/isb/jetstream"
)

// Restarting the server (same store directory) five times while two
// producers and a consumer group run: every item a produce acknowledged
// is read, nothing is read that was not produced, and duplicates (a
// produce that failed and was made again, a read again after a commit
// lost with the server) are counted, not hidden.
func TestRestartsUnderLoad(t *testing.T) {
	const (
		producers = 2
		restarts  = 5
		batch     = 20
	)
	ctx := testCtx(t)
	srv := natstest.Start(t)
	prefix := freshPrefix()
	opts := []isb.TopicOption{isb.Partitions(2)}
	// A short AckTimeout: a publish lost with the server is sent again
	// soon after the server is back.
	tune := []jetstream.Option{jetstream.AckTimeout(500 * time.Millisecond), jetstream.RequestTimeout(time.Second)}
	prod := mustTopic(t, srv.Connect(), prefix, opts, tune...)
	cons := mustTopic(t, srv.Connect(), prefix, opts, tune...)
	c, err := cons.PullConsumer("g", isb.BatchSize(64))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// Producers run until the restarts are over, each recording the
	// sequence numbers its produces acknowledged.
	var acked, produceErrs atomic.Int64
	produced := make([]int, producers) // per producer: seq 0..produced-1 made, acknowledged or not
	ackedItems := make([][]bool, producers)
	stopProducing := make(chan struct{})
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			pr := prod.Producer(nil)
			for seq := 0; ; {
				select {
				case <-stopProducing:
					produced[p] = seq
					return
				default:
				}
				err := pr.ProduceBatch(ctx, seqs(p, seq, batch))
				ok := err == nil
				if !ok {
					produceErrs.Add(1) // not acknowledged: may be stored or not
					if ctx.Err() != nil {
						produced[p] = seq + batch
						return
					}
				}
				for range batch {
					ackedItems[p] = append(ackedItems[p], ok)
				}
				if ok {
					acked.Add(batch)
				}
				seq += batch
			}
		})
	}

	var readCount atomic.Int64
	var mu sync.Mutex
	seen := make(map[isbtest.Item]int)
	var pullErrs []error
	readDone := make(chan struct{})
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(readDone)
		for {
			b, err := c.Pull(stop)
			if err != nil {
				if stop.Err() != nil {
					return
				}
				mu.Lock()
				pullErrs = append(pullErrs, err)
				mu.Unlock()
				continue
			}
			mu.Lock()
			for _, it := range b.Items {
				seen[it]++
			}
			mu.Unlock()
			readCount.Add(int64(len(b.Items)))
		}
	}()

	// Restart whenever producers and the consumer both made progress since
	// the last restart, so every restart hits a running load.
	for r := range restarts {
		lastAcked, lastRead := acked.Load(), readCount.Load()
		waitFor(t, "progress before a restart", func() bool {
			return acked.Load() >= lastAcked+200 && readCount.Load() >= lastRead+200
		})
		if err := srv.Restart(); err != nil {
			t.Fatalf("restart %d: %v", r+1, err)
		}
	}
	lastAcked := acked.Load()
	waitFor(t, "progress after the last restart", func() bool { return acked.Load() >= lastAcked+200 })
	close(stopProducing)
	wg.Wait()

	// Every acknowledged item is read at least once.
	missing := func() (isbtest.Item, bool) {
		mu.Lock()
		defer mu.Unlock()
		for p := range producers {
			for seq, ok := range ackedItems[p] {
				if it := (isbtest.Item{Producer: p, Seq: seq}); ok && seen[it] == 0 {
					return it, true
				}
			}
		}
		return isbtest.Item{}, false
	}
	waitFor(t, "every acknowledged item read", func() bool { _, ok := missing(); return !ok })
	cancel()
	<-readDone
	for _, err := range pullErrs {
		t.Errorf("Pull: %v", err)
	}
	dups := 0
	for it, n := range seen {
		if it.Producer < 0 || it.Producer >= producers || it.Seq < 0 || it.Seq >= produced[it.Producer] {
			t.Fatalf("read %v, which no producer made", it)
		}
		dups += n - 1
	}
	t.Logf("%d restarts: %d items acknowledged, %d read, %d duplicates, %d produces failed",
		restarts, acked.Load(), readCount.Load(), dups, produceErrs.Load())
}
