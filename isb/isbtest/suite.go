// Package isbtest is the behaviour suite every isb storage mode must pass,
// and SliceBackend, a reference Backend that the isb tests run against.
// A storage package's tests call Run with a Factory that makes its topics.
package isbtest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
)

// Item is the element type the suite produces: who produced it and its
// sequence number at that producer, so every item is accounted for.
type Item struct {
	Producer int    `json:"p"`
	Seq      int    `json:"s"`
	Key      string `json:"k,omitempty"`
}

// Factory creates a fresh, empty topic named name with opts on the storage
// under test. It registers cleanup (closing the topic, removing files) with t.
// It must return isb.NewTopic's error unchanged for invalid options and
// names, so it should not use name before NewTopic validated it.
type Factory func(t testing.TB, name string, opts ...isb.TopicOption) (*isb.Topic[Item], error)

// Run runs the whole suite against f, one subtest per behaviour. The
// subtests run one after the other; none asserts a duration.
func Run(t *testing.T, f Factory) { run(t, f, false) }

// run is Run on storage that may be sparse (Storage.Sparse).
func run(t *testing.T, f Factory, sparse bool) {
	s := suite{f: f, sparse: sparse}
	for _, c := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"TopicOptions", s.topicOptions},
		{"ConsumerOptions", s.consumerOptions},
		{"ConcurrentProducersAndGroups", s.concurrentAccounting},
		{"CapacityNeverExceeded", s.capacityNeverExceeded},
		{"FIFOAdmission", s.fifoAdmission},
		{"CancelledWaiterTakesNoCapacity", s.cancelledWaiter},
		{"FailBatchRules", s.failBatchRules},
		{"WaitBatchRules", s.waitBatchRules},
		{"NumericKeys", s.numericKeys},
		{"StringKeys", s.stringKeys},
		{"SelectorOutOfRange", s.selectorOutOfRange},
		{"ProduceToOffsets", s.produceToOffsets},
		{"CommitAfterEmptyAndCancelledPull", s.commitAfterEmptyPull},
		{"CommitToErrors", s.commitToErrors},
		{"CommitWhilePullBlocked", s.commitWhilePullBlocked},
		{"AutoCommitResume", s.autoCommitResume},
		{"ManualCommitResume", s.manualCommitResume},
		{"LateGroup", s.lateGroup},
		{"ConsumerSplit", s.consumerSplit},
		{"GroupInUse", s.groupInUse},
		{"DeleteGroupRecomputesMin", s.deleteGroupRecomputesMin},
		{"DeleteGroupReleasesCapacity", s.deleteGroupReleasesCapacity},
		{"DeleteGroupErrors", s.deleteGroupErrors},
		{"DeleteGroupWhileOthersCommit", s.deleteGroupWhileOthersCommit},
		{"RoundRobinSkipsEmptyPartitions", s.roundRobinPartitions},
		{"TopicRoundRobin", s.topicRoundRobin},
		{"PullWakesOnProduce", s.pullWakesOnProduce},
		{"PushAutoCommit", s.pushAutoCommit},
		{"PushManualRetry", s.pushManualRetry},
		{"PushStopWaitsForHandler", s.pushStopWaits},
		{"PushHandlerPanic", s.pushHandlerPanic},
		{"CloseWakesBlockedCalls", s.closeWakes},
		{"ConsumerCloseWakesPull", s.consumerCloseWakesPull},
		{"CloseUnderLoad", s.closeUnderLoad},
	} {
		t.Run(c.name, func(t *testing.T) { s.mark(t); c.run(t) })
	}
}

type suite struct {
	f      Factory
	sparse bool // Storage.Sparse
}

// topic makes a fresh topic or fails the test.
func (s suite) topic(t *testing.T, opts ...isb.TopicOption) *isb.Topic[Item] {
	t.Helper()
	tp, err := s.f(t, "orders", opts...)
	if err != nil {
		skipOwnLimits(t, err)
		t.Fatalf("factory: %v", err)
	}
	return tp
}

// sparse holds the names of the tests that run on sparse storage
// (Storage.Sparse), so that the helpers that check offsets know.
var sparse sync.Map

// mark records that t (and its subtests) run on sparse storage when the
// suite's is.
func (s suite) mark(t *testing.T) {
	if s.sparse {
		sparse.Store(t.Name(), true)
		t.Cleanup(func() { sparse.Delete(t.Name()) })
	}
}

// isSparse reports whether t or a test it runs under is on sparse storage.
func isSparse(t testing.TB) bool {
	found := false
	sparse.Range(func(k, _ any) bool {
		name := k.(string)
		found = t.Name() == name || strings.HasPrefix(t.Name(), name+"/")
		return !found
	})
	return found
}

// atOffset reports whether got, an offset storage gave, is want, an offset
// the test counted in items: the same on contiguous storage, at or past
// it on sparse storage.
func atOffset(t testing.TB, got, want int64) bool {
	if isSparse(t) {
		return got >= want
	}
	return got == want
}

// boundedTopic makes a topic with Capacity(capacity) and opts, or, on
// storage that enforces its own limits, with opts alone: for tests whose
// bound is incidental to what they check.
func (s suite) boundedTopic(t *testing.T, capacity int64, opts ...isb.TopicOption) *isb.Topic[Item] {
	t.Helper()
	tp, err := s.f(t, "orders", append([]isb.TopicOption{isb.Capacity(capacity)}, opts...)...)
	if capacityRefused(err) {
		tp, err = s.f(t, "orders", opts...)
	}
	if err != nil {
		t.Fatalf("factory: %v", err)
	}
	return tp
}

// capacityRefused reports whether NewTopic refused the Capacity option:
// the storage enforces its own limits (isb.Caps.OwnsLimits).
func capacityRefused(err error) bool {
	var oe *isb.OptionError
	return errors.As(err, &oe) && oe.Option == "Capacity"
}

// skipOwnLimits skips a test whose topic NewTopic refused the Capacity
// option for: storage that enforces its own limits (isb.Caps.OwnsLimits,
// JetStream) keeps no capacity gate in the topic, so what the test checks
// of the gate does not apply; the storage's own limit has tests of its
// own package.
func skipOwnLimits(t *testing.T, err error) {
	t.Helper()
	if capacityRefused(err) {
		t.Skipf("storage enforces its own limits (isb.Caps.OwnsLimits): the topic's Capacity does not apply: %v", err)
	}
}

// testTimeout bounds every wait of the suite, so a lost wake-up fails the
// test instead of hanging it. It is generous: the suite runs on loaded
// machines and under the race detector.
const testTimeout = 2 * time.Minute

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// quiet is how long a Pull waits to show that there is nothing to read.
const quiet = 20 * time.Millisecond

// consumer opens a consumer of group owning every partition and closes it
// at cleanup.
func consumer(t *testing.T, tp *isb.Topic[Item], group string, opts ...isb.ConsumerOption) *isb.PullConsumer[Item] {
	t.Helper()
	c, err := tp.PullConsumer(group, opts...)
	if err != nil {
		t.Fatalf("PullConsumer(%q): %v", group, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// pull pulls one batch and returns it with its items copied (they may
// alias storage).
func pull(t *testing.T, ctx context.Context, c *isb.PullConsumer[Item]) isb.Batch[Item] {
	t.Helper()
	b, err := c.Pull(ctx)
	if err != nil {
		t.Fatalf("Pull: %v", err)
	}
	b.Items = slices.Clone(b.Items)
	return b
}

// pullItems pulls until it has n items and returns them in pull order,
// checking that batches of a partition follow each other without a gap.
func pullItems(t *testing.T, ctx context.Context, c *isb.PullConsumer[Item], n int) []Item {
	t.Helper()
	var got []Item
	for len(got) < n {
		b := pull(t, ctx, c)
		got = append(got, b.Items...)
	}
	if len(got) != n {
		t.Fatalf("pulled %d items, want %d", len(got), n)
	}
	return got
}

// expectEmpty checks that c has nothing to read now.
func expectEmpty(t *testing.T, c *isb.PullConsumer[Item]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), quiet)
	defer cancel()
	b, err := c.Pull(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Pull on a drained consumer = %v, %v; want context.DeadlineExceeded", b, err)
	}
}

// produce produces items one by one; on sparse storage as one batch, so
// that the items of one call are as contiguous as the storage stores one
// append (a packed stream's frame), and the tests' offsets count them.
func produce(t *testing.T, ctx context.Context, pr *isb.Producer[Item], items ...Item) {
	t.Helper()
	if isSparse(t) {
		if err := pr.ProduceBatch(ctx, items); err != nil {
			t.Fatalf("ProduceBatch(%v): %v", items, err)
		}
		return
	}
	for _, it := range items {
		if err := pr.Produce(ctx, it); err != nil {
			t.Fatalf("Produce(%v): %v", it, err)
		}
	}
}

// seqs returns items 0..n-1 of producer p.
func seqs(p, from, n int) []Item {
	items := make([]Item, n)
	for i := range items {
		items[i] = Item{Producer: p, Seq: from + i}
	}
	return items
}

// waitFor polls cond until it holds or the test times out; it is how the
// suite waits for another goroutine to reach a state (such as queued).
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(time.Millisecond):
		}
	}
}

// toPartition routes an item to the partition named by its Producer field.
var toPartition = isb.BySelector(func(it Item, n int) int { return it.Producer })

// optionName checks that err is an *isb.OptionError naming option.
func optionName(t *testing.T, what string, err error, option string) {
	t.Helper()
	var oe *isb.OptionError
	if !errors.As(err, &oe) || !errors.Is(err, isb.ErrInvalidOption) {
		t.Fatalf("%s: error %v, want an *isb.OptionError", what, err)
	}
	if oe.Option != option {
		t.Fatalf("%s: error names option %q, want %q (%v)", what, oe.Option, option, err)
	}
}
