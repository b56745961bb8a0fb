package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// What the collector received equals a count made directly from the views
// the example produced: each view's window is its event time truncated to
// the minute. The disorder (8s) is within MaxDelay (10s), so none is late
// and every view is counted once, however often a batch was POSTed.
func TestCollectorGetsEveryWindowCount(t *testing.T) {
	const n = 1200
	counts := map[time.Time]map[string]int{}
	for _, v := range views(n) {
		w := v.at.Truncate(time.Minute)
		if counts[w] == nil {
			counts[w] = map[string]int{}
		}
		counts[w][v.page]++
	}
	var want strings.Builder
	for i, w := range slices.SortedFunc(maps.Keys(counts), time.Time.Compare) {
		if i > 0 {
			fmt.Fprintln(&want)
		}
		fmt.Fprintf(&want, "%s-%s", w.Format("15:04"), w.Add(time.Minute).Format("15:04"))
		for _, p := range slices.Sorted(maps.Keys(counts[w])) {
			fmt.Fprintf(&want, "  %s %d", p, counts[w][p])
		}
	}
	fmt.Fprintf(&want, "\nviews counted: %d, late: 0\n", n)
	if len(counts) < 5 {
		t.Fatalf("the oracle has %d windows, want several", len(counts))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, config{topic: "page-views", views: n}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if ctx.Err() != nil {
		t.Fatal("the example did not end by itself")
	}
	if got := out.String(); got != want.String() {
		t.Errorf("report:\n%s\nwant:\n%s", got, want.String())
	}
}

// With -url the results go to a collector elsewhere (here the test's),
// which gets as many results as there are (window, page) pairs.
func TestPostsToGivenURL(t *testing.T) {
	col, err := startCollector()
	if err != nil {
		t.Fatal(err)
	}
	defer col.close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, config{topic: "views", url: col.url, views: 300}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	pairs := map[string]bool{}
	for _, v := range views(300) {
		pairs[v.at.Truncate(time.Minute).String()+"/"+v.page] = true
	}
	rows := col.results()
	if len(rows) != len(pairs) {
		t.Errorf("the collector got %d results, want %d", len(rows), len(pairs))
	}
	var total int64
	for _, r := range rows {
		total += r.Count
	}
	if total != 300 {
		t.Errorf("the results count %d views, want 300", total)
	}
	if w := fmt.Sprintf("posted %d window counts to %s, late: 0\n", len(pairs), col.url); out.String() != w {
		t.Errorf("printed %q, want %q", out.String(), w)
	}
}
