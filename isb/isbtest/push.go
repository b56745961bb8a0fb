package isbtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
)

// handled records what push handlers were called with.
type handled struct {
	mu      sync.Mutex
	calls   []isb.Batch[Item] // every call, items copied
	ok      []Item            // items of calls that returned nil
	errs    []string          // OnError reports: "partition/offset"
	handler func(call int, b isb.Batch[Item]) error
}

func (h *handled) handle(_ context.Context, b isb.Batch[Item]) error {
	h.mu.Lock()
	b.Items = slices.Clone(b.Items)
	h.calls = append(h.calls, b)
	call := len(h.calls)
	h.mu.Unlock()
	err := h.handler(call, b)
	if err == nil {
		h.mu.Lock()
		h.ok = append(h.ok, b.Items...)
		h.mu.Unlock()
	}
	return err
}

func (h *handled) onError(partition int, offset int64, _ error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.errs = append(h.errs, fmt.Sprintf("%d/%d", partition, offset))
}

func (h *handled) okCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ok)
}

var errHandler = errors.New("isbtest: handler failure")

// pushAutoCommit: two goroutines handle every item once; a failing batch
// is reported and skipped, and everything ends committed.
func (s suite) pushAutoCommit(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t, isb.Partitions(2))
	const n = 40
	var failed atomic.Bool
	h := &handled{handler: func(_ int, b isb.Batch[Item]) error {
		if slices.Contains(b.Items, Item{Seq: 5}) && !failed.Swap(true) {
			return errHandler
		}
		return nil
	}}
	pc, err := tp.Subscribe("g", h.handle, isb.Consumers(2), isb.BatchSize(3), isb.OnError(h.onError))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Stop() })
	if err := tp.Producer(nil).ProduceBatch(ctx, seqs(0, 0, n)); err != nil {
		t.Fatal(err)
	}
	total := func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		k := 0
		for _, b := range h.calls {
			k += len(b.Items)
		}
		return k
	}
	waitFor(t, ctx, "every item handled", func() bool { return total() >= n })
	if err := pc.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	var all []Item
	var failedAt string
	var failedLen int
	for _, b := range h.calls {
		all = append(all, b.Items...)
		if slices.Contains(b.Items, Item{Seq: 5}) {
			failedAt, failedLen = fmt.Sprintf("%d/%d", b.Partition, b.Offset), len(b.Items)
		}
	}
	checkExactlyOnce(t, "handler calls", all, 1, n)
	if len(h.ok) != n-failedLen {
		t.Fatalf("%d items handled successfully, want %d (all but the failed batch)", len(h.ok), n-failedLen)
	}
	if !slices.Equal(h.errs, []string{failedAt}) {
		t.Fatalf("OnError calls %v, want exactly [%s]", h.errs, failedAt)
	}
	if p := tp.Pending("g"); p != 0 {
		t.Fatalf("Pending after Stop = %d, want 0 (auto commit skips the failed batch)", p)
	}
}

// pushManualRetry: under manual commit a failing handler gets the same
// batch again after a backoff until it succeeds; nothing is lost and the
// batch is committed only after success.
func (s suite) pushManualRetry(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t)
	h := &handled{handler: func(call int, _ isb.Batch[Item]) error {
		if call <= 2 {
			return errHandler
		}
		return nil
	}}
	pr := tp.Producer(nil)
	if err := pr.ProduceBatch(ctx, seqs(0, 0, 3)); err != nil {
		t.Fatal(err)
	}
	pc, err := tp.Subscribe("g", h.handle, isb.ManualCommit(), isb.Backoff(time.Millisecond, 4*time.Millisecond),
		isb.BatchSize(100), isb.OnError(h.onError))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Stop() })
	waitFor(t, ctx, "the first items handled", func() bool { return h.okCount() >= 3 })
	waitFor(t, ctx, "the first items committed", func() bool { return tp.Pending("g") == 0 })
	if err := pr.ProduceBatch(ctx, seqs(0, 3, 4)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "every item handled", func() bool { return h.okCount() >= 7 })
	waitFor(t, ctx, "every item committed", func() bool { return tp.Pending("g") == 0 })
	if err := pc.Stop(); err != nil {
		t.Fatal(err)
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	first := h.calls[0]
	if first.Offset != 0 {
		t.Fatalf("first batch at offset %d, want 0", first.Offset)
	}
	for i := 1; i <= 2; i++ { // the two retries got the very same batch
		if b := h.calls[i]; b.Partition != first.Partition || b.Offset != first.Offset || !slices.Equal(b.Items, first.Items) {
			t.Fatalf("retry %d got %+v, want %+v", i, b, first)
		}
	}
	if !slices.Equal(h.errs, []string{"0/0", "0/0"}) {
		t.Fatalf("OnError calls %v, want exactly two for partition 0 offset 0", h.errs)
	}
	// Every batch after the two failures was handled once, successfully.
	checkExactlyOnce(t, "successful handler calls", h.ok, 1, 7)
	var handledItems int
	for _, b := range h.calls[2:] {
		handledItems += len(b.Items)
	}
	if handledItems != 7 {
		t.Fatalf("%d calls delivered %d items after the failures, want 7 (no redelivery after success)", len(h.calls)-2, handledItems)
	}
}

// pushStopWaits: Stop cancels the handlers' ctx and returns only after the
// handler in flight returned; the group can be opened again afterwards.
func (s suite) pushStopWaits(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t)
	entered, release := make(chan struct{}), make(chan struct{})
	var finished atomic.Bool
	var ctxErr atomic.Value
	var calls atomic.Int32
	handler := func(hctx context.Context, b isb.Batch[Item]) error {
		if calls.Add(1) == 1 {
			close(entered)
			<-release // ignores hctx on purpose: Stop must wait anyway
			ctxErr.Store(fmt.Sprint(hctx.Err()))
			finished.Store(true)
		}
		return nil
	}
	pc, err := tp.Subscribe("g", handler)
	if err != nil {
		t.Fatal(err)
	}
	produce(t, ctx, tp.Producer(nil), Item{Seq: 0})
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- pc.Stop() }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a handler was in flight", err)
	case <-time.After(quiet):
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !finished.Load() {
		t.Fatal("Stop returned before the handler finished")
	}
	if got := ctxErr.Load(); got != fmt.Sprint(context.Canceled) {
		t.Fatalf("handler ctx error at Stop = %v, want %v", got, context.Canceled)
	}
	if err := pc.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("handler called %d times, want 1", n)
	}
	// The handler succeeded: its batch is committed and the group is free.
	if p := tp.Pending("g"); p != 0 {
		t.Fatalf("Pending after Stop = %d, want 0", p)
	}
	c := consumer(t, tp, "g")
	expectEmpty(t, c)
}

// pushHandlerPanic: a handler that panics does not kill the process: the
// panic becomes a *PanicError with the value and the stack, reported to
// OnError for that batch; under auto commit the batch is then skipped like
// any failed one, and the other batches are handled.
func (s suite) pushHandlerPanic(t *testing.T) {
	ctx := testContext(t)
	tp := s.topic(t)
	var mu sync.Mutex
	var reported []error
	var where []string
	h := &handled{handler: func(call int, b isb.Batch[Item]) error {
		if call == 1 {
			panic(fmt.Sprintf("boom at offset %d", b.Offset))
		}
		return nil
	}}
	pr := tp.Producer(nil)
	produce(t, ctx, pr, seqs(0, 0, 3)...)
	pc, err := tp.Subscribe("g", h.handle, isb.BatchSize(3), isb.OnError(func(p int, off int64, err error) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, err)
		where = append(where, fmt.Sprintf("%d/%d", p, off))
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Stop() })
	waitFor(t, ctx, "the panicking batch reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reported) == 1
	})
	produce(t, ctx, pr, seqs(0, 3, 2)...)
	waitFor(t, ctx, "the next batch handled", func() bool { return h.okCount() == 2 })
	if err := pc.Stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var pe *isb.PanicError
	if len(reported) != 1 || !errors.As(reported[0], &pe) || !errors.Is(reported[0], isb.ErrPanic) {
		t.Fatalf("OnError got %v, want one *isb.PanicError", reported)
	}
	if pe.Value != "boom at offset 0" || !strings.Contains(string(pe.Stack), "pushHandlerPanic") {
		t.Fatalf("panic value %q, stack:\n%s\nwant the value and a stack through the handler", pe.Value, pe.Stack)
	}
	if !slices.Equal(where, []string{"0/0"}) {
		t.Fatalf("OnError at %v, want [0/0]", where)
	}
	if !slices.Equal(h.ok, seqs(0, 3, 2)) {
		t.Fatalf("handled %v after the panic, want %v", h.ok, seqs(0, 3, 2))
	}
	if p := tp.Pending("g"); p != 0 {
		t.Fatalf("Pending = %d, want 0 (auto commit skips the failed batch)", p)
	}
}
