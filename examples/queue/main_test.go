package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunAccountsForEveryOrder(t *testing.T) {
	cfg := config{producers: 8, perProd: 2000, customers: 5, partitions: 3, capacity: 100, timeout: time.Minute}
	var out bytes.Buffer
	if err := run(context.Background(), cfg, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 ||
		!strings.HasPrefix(lines[1], "billing (2 pull consumers): 16000 orders,") ||
		!strings.HasPrefix(lines[2], "audit   (2 push handlers):  16000 orders,") ||
		!strings.HasPrefix(lines[3], "ok: ") {
		t.Errorf("report:\n%s", out.String())
	}
}

func TestRunStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	// Large enough not to finish in 20ms, even on a fast machine.
	cfg := config{producers: 4, perProd: 5_000_000, customers: 5, partitions: 4, capacity: 64, timeout: time.Minute}
	var out bytes.Buffer
	err := run(ctx, cfg, &out)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run after cancel = %v; want context.Canceled\n%s", err, out.String())
	}
	// goleak (TestMain) checks that every producer and consumer stopped.
}

// TestTallyEndsOnDuplicates: a duplicate that makes the count jump past the
// expected total still ends the wait, and check reports it.
func TestTallyEndsOnDuplicates(t *testing.T) {
	tl := newTally(1, 3)
	tl.add(isb.Batch[Order]{Items: []Order{{Producer: 0, Seq: 0}, {Producer: 0, Seq: 1}}})
	tl.add(isb.Batch[Order]{Items: []Order{{Producer: 0, Seq: 1}, {Producer: 0, Seq: 2}}}) // 4 > 3
	select {
	case <-tl.allReceived:
	default:
		t.Fatal("allReceived not closed after 4 of 3 orders")
	}
	tl.add(isb.Batch[Order]{Items: []Order{{Producer: 0, Seq: 2}}}) // must not close again
	err := tl.check("g")
	if err == nil || !strings.Contains(err.Error(), "group g: 2 duplicates") || !strings.Contains(err.Error(), "2 orders out of order") {
		t.Fatalf("check = %v, want 2 duplicates and 2 out of order", err)
	}
}
