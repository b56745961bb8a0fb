package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The example starts its roles by running its own executable again
// (os.Executable), which under go test is the test binary: for them
// TestMain runs main instead of the tests.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "-nats=") {
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// The embedded mode runs the four roles as child processes against its own
// NATS server; every process ends by itself, and the counts printed equal
// a count made directly from the events: event i is in the second of
// start + i*10ms, with key keyOf(i). 1050 events end in a part window of
// 50.
func TestEmbeddedCountsEveryWindow(t *testing.T) {
	const events = 1050
	counts := map[time.Time]map[string]int{}
	for i := range int64(events) {
		w := start.Add(time.Duration(i) * 10 * time.Millisecond).Truncate(time.Second)
		if counts[w] == nil {
			counts[w] = map[string]int{}
		}
		counts[w][keyOf(i)]++
	}
	var want strings.Builder
	for _, w := range slices.SortedFunc(maps.Keys(counts), time.Time.Compare) {
		fmt.Fprintf(&want, "%s-%s", w.Format("15:04:05"), w.Add(time.Second).Format("15:04:05"))
		for _, k := range slices.Sorted(maps.Keys(counts[w])) {
			fmt.Fprintf(&want, "  %s %d", k, counts[w][k])
		}
		fmt.Fprintln(&want)
	}
	fmt.Fprintf(&want, "events counted: %d of %d, late: 0\n\n", events, events)
	if len(counts) != 11 {
		t.Fatalf("the oracle has %d windows, want 11", len(counts))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := embedded(ctx, config{events: events}, &out); err != nil {
		t.Fatalf("embedded run: %v\n%s", err, out.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("the processes did not end by themselves:\n%s", out.String())
	}
	t.Log(out.String())
	got, procs, ok := strings.Cut(out.String(), want.String())
	if !ok || got != "" {
		t.Fatalf("counts:\n%s\nwant:\n%s", out.String(), want.String())
	}
	lines := strings.Split(strings.TrimSuffix(procs, "\n"), "\n")
	if len(lines) != len(roles) {
		t.Fatalf("%d process lines, want %d:\n%s", len(lines), len(roles), procs)
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, "process "+roles[i]+" ") || !strings.Contains(l, "exit status 0") ||
			!strings.HasSuffix(l, ": ended: its part of the pipeline ran to the end") {
			t.Errorf("process line %q: want role %s, exit status 0, ended", l, roles[i])
		}
	}
}
