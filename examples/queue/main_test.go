package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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
