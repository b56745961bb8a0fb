package jsstorage_test

import (
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/pipeline/jsstorage"
)

// TestJoinRunKeepsTheRunUntilEverySinkEnded: two joins get the same run;
// ends of some sink replicas keep it; the end of the last one makes the
// next join start a new run, which other processes then join.
func TestJoinRunKeepsTheRunUntilEverySinkEnded(t *testing.T) {
	srv := natstest.Start(t)
	a, b := newStorage(t, srv), newStorage(t, srv)
	all := []string{"out/0", "out/1", "late/0"}
	joined, err := a.JoinRun("orders")
	if err != nil {
		t.Fatal(err)
	}
	if joined.After != "" {
		t.Fatalf("the first JoinRun = %+v; want no run before it", joined)
	}
	first := joined.ID
	join := func(want string) {
		t.Helper()
		for _, st := range []*jsstorage.Storage{a, b} {
			if got, err := st.JoinRun("orders"); err != nil || got != (pipeline.Run{ID: want}) {
				t.Fatalf("JoinRun = %+v, %v; want run %q going on", got, err, want)
			}
		}
	}
	join(first)
	if other, err := a.JoinRun("payments"); err != nil || other.ID == first || other.After != "" {
		t.Fatalf("JoinRun of another pipeline = %+v, %v; want a first run of its own", other, err)
	}
	for i, proc := range all[:2] {
		if err := []interface {
			EndRun(string, string, string, []string) error
		}{a, b}[i].EndRun("orders", first, proc, all); err != nil {
			t.Fatal(err)
		}
		join(first)
	}
	// A repeated end changes nothing.
	if err := a.EndRun("orders", first, all[0], all); err != nil {
		t.Fatal(err)
	}
	join(first)
	if err := b.EndRun("orders", first, all[2], all); err != nil {
		t.Fatal(err)
	}
	joined, err = b.JoinRun("orders")
	if err != nil || joined.ID == first || joined.After != first {
		t.Fatalf("JoinRun after every sink ended = %+v, %v; want a new run after %q", joined, err, first)
	}
	second := joined.ID
	join(second)
	// A late end of the first run does not touch the second.
	if err := a.EndRun("orders", first, all[0], all); err != nil {
		t.Fatal(err)
	}
	join(second)
}

// TestJoinRunConcurrent: 8 processes (storages on their own connections)
// joining at once all get one run, the first time and again after the run
// ended.
func TestJoinRunConcurrent(t *testing.T) {
	srv := natstest.Start(t)
	const n = 8
	var stores [n]*jsstorage.Storage
	for i := range stores {
		// A bound for a loaded machine: under -race beside other
		// packages, 8 first joins at once (the state bucket created by
		// one of them) took longer than the default 5 s request timeout
		// once. What the test checks, one run id shared, is unchanged.
		stores[i] = newStorage(t, srv, jsstorage.RequestTimeout(30*time.Second))
	}
	joinAll := func() []pipeline.Run {
		t.Helper()
		var wg sync.WaitGroup
		ids, errs := make([]pipeline.Run, n), make([]error, n)
		for i := range n {
			wg.Go(func() { ids[i], errs[i] = stores[i].JoinRun("race") })
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("process %d: %v", i, errs[i])
			}
			if ids[i].ID != ids[0].ID {
				t.Fatalf("process %d joined %q, process 0 %q", i, ids[i].ID, ids[0].ID)
			}
		}
		return ids
	}
	var runs []string
	for round := range 5 {
		joined := joinAll()
		id := joined[0].ID
		// The one join that wrote the new run says which run it replaced;
		// the joins that found it recorded found it going on.
		var after []string
		for _, r := range joined {
			if r.After != "" {
				after = append(after, r.After)
			}
		}
		if round > 0 && (len(after) != 1 || after[0] != runs[round-1]) || round == 0 && len(after) != 0 {
			t.Fatalf("round %d: the joins said they came after %q; want %d saying the previous run", round, after, min(round, 1))
		}
		for _, old := range runs {
			if id == old {
				t.Fatalf("round %d joined %q, a run that ended", round, id)
			}
		}
		runs = append(runs, id)
		// Every process ends its sink replica, concurrently.
		all := make([]string, n)
		for i := range all {
			all[i] = "sink/" + string(rune('0'+i))
		}
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { errs[i] = stores[i].EndRun("race", id, all[i], all) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: EndRun of process %d: %v", round, i, err)
			}
		}
	}
}
