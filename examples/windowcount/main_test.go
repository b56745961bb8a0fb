package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The report equals a count made directly from the views: each view's
// minute is its event time truncated to the minute. No view is late (the
// source's MaxDelay covers the disorder), so all 300 are counted once.
func TestReportMatchesDirectCount(t *testing.T) {
	counts := map[time.Time]map[string]int{}
	for r := range 2 {
		for _, v := range views(r) {
			m := v.EventTime.Truncate(time.Minute)
			if counts[m] == nil {
				counts[m] = map[string]int{}
			}
			counts[m][v.Value]++
		}
	}
	var want strings.Builder
	minutes := make([]time.Time, 0, len(counts))
	for m := range counts {
		minutes = append(minutes, m)
	}
	slices.SortFunc(minutes, time.Time.Compare)
	for _, m := range minutes {
		fmt.Fprintf(&want, "%s-%s", m.Format("15:04"), m.Add(time.Minute).Format("15:04"))
		pages := make([]string, 0, len(counts[m]))
		for p := range counts[m] {
			pages = append(pages, p)
		}
		slices.Sort(pages)
		for _, p := range pages {
			fmt.Fprintf(&want, "  %s %d", p, counts[m][p])
		}
		fmt.Fprintln(&want)
	}
	fmt.Fprintf(&want, "views counted: 300, late: 0\n")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out); err != nil {
		t.Fatalf("run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the example did not end by itself")
	}
	if got := out.String(); got != want.String() {
		t.Errorf("report:\n%s\nwant:\n%s", got, want.String())
	}
}
