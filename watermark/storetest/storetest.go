// Package storetest checks that a [watermark.Store] keeps the contract the
// fetchers and publishers rely on. Every Store implementation runs the same
// suite from its tests:
//
//	func TestStoreContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) watermark.Store { return NewStore(...) })
//	}
//
// The suite checks what the contract promises and nothing more: the initial
// values of a Watch are compared as a set (their order is not promised),
// everything after OpSynced in order; changes made while a watcher lags are
// made to distinct keys, so a store that coalesces per key and one that
// does not both pass.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/watermark"
)

// waitTimeout bounds every wait for a watch, so a broken store fails a test
// instead of hanging it. It is not a timing assertion: a correct store is
// orders of magnitude faster.
const waitTimeout = 30 * time.Second

// Run runs the contract suite, one subtest per promise. newStore returns a
// new, empty store for each subtest; it may register cleanups on t.
func Run(t *testing.T, newStore func(t *testing.T) watermark.Store) {
	for _, c := range []struct {
		name string
		f    func(*testing.T, watermark.Store)
	}{
		{"PutGetDelete", testPutGetDelete},
		{"EmptyValue", testEmptyValue},
		{"PutCopiesValue", testPutCopiesValue},
		{"Names", testNames},
		{"CancelledContext", testCancelledContext},
		{"WatchInitialThenChanges", testWatchInitialThenChanges},
		{"WatchEachChangeInOrder", testWatchEachChangeInOrder},
		{"WatchEmptyBucket", testWatchEmptyBucket},
		{"WatchersIndependent", testWatchersIndependent},
		{"WatchLaggingKeepsOrder", testWatchLaggingKeepsOrder},
		{"WatchEndsOnCancel", testWatchEndsOnCancel},
		{"WatchCancelledBeforeStart", testWatchCancelledBeforeStart},
		{"WatchBreakThenWatchAgain", testWatchBreakThenWatchAgain},
	} {
		t.Run(c.name, func(t *testing.T) { c.f(t, newStore(t)) })
	}
}

// Render formats updates as "op key=value", for exact comparisons in
// failure messages.
func Render(us []watermark.Update) []string {
	out := make([]string, 0, len(us))
	for _, u := range us {
		out = append(out, fmt.Sprintf("%v %s=%s", u.Op, u.Key, u.Value))
	}
	return out
}

func testPutGetDelete(t *testing.T, s watermark.Store) {
	ctx := t.Context()
	if _, err := s.Get(ctx, "b", "k"); !errors.Is(err, watermark.ErrNotFound) {
		t.Fatalf("Get from a bucket never written: %v, want ErrNotFound", err)
	}
	mustPut(t, s, "b", "k", "one")
	mustPut(t, s, "b", "k", "two")
	mustGet(t, s, "b", "k", "two")
	if _, err := s.Get(ctx, "b", "other"); !errors.Is(err, watermark.ErrNotFound) {
		t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, "other", "k"); !errors.Is(err, watermark.ErrNotFound) {
		t.Fatalf("Get of the key from another bucket: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "b", "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "b", "k"); !errors.Is(err, watermark.ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "b", "k"); err != nil {
		t.Fatalf("Delete of a deleted key: %v", err)
	}
	if err := s.Delete(ctx, "never", "k"); err != nil {
		t.Fatalf("Delete in a bucket never written: %v", err)
	}
	mustPut(t, s, "b", "k", "three") // a deleted key can come back
	mustGet(t, s, "b", "k", "three")
}

// testEmptyValue: a put of nothing is a value, not a delete.
func testEmptyValue(t *testing.T, s watermark.Store) {
	ctx := t.Context()
	for _, v := range [][]byte{nil, {}} {
		if err := s.Put(ctx, "b", "k", v); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, "b", "k")
		if err != nil || len(got) != 0 {
			t.Fatalf("Get after Put(%#v) = %q, %v; want an empty value", v, got, err)
		}
	}
	got := watchUntilSynced(t, s, "b")
	if want := []string{"put k=", "synced ="}; !slices.Equal(Render(got), want) {
		t.Fatalf("watch = %q, want %q", Render(got), want)
	}
}

func testPutCopiesValue(t *testing.T, s watermark.Store) {
	v := []byte("one")
	if err := s.Put(t.Context(), "b", "k", v); err != nil {
		t.Fatal(err)
	}
	v[0] = 'X'
	mustGet(t, s, "b", "k", "one")
}

func testNames(t *testing.T, s watermark.Store) {
	ctx := t.Context()
	for _, c := range []struct{ bucket, key string }{
		{"", "k"}, {"a.b", "k"}, {"a b", "k"}, {"a/b", "k"}, {"a*", "k"}, {"a>", "k"},
		{"b", ""}, {"b", "k*"}, {"b", "k>"}, {"b", "k k"}, {"b", "ké"},
		{"b", ".k"}, {"b", "k."}, {"b", "a..b"},
	} {
		if err := s.Put(ctx, c.bucket, c.key, []byte("v")); !errors.Is(err, watermark.ErrInvalidName) {
			t.Errorf("Put(%q, %q): %v, want ErrInvalidName", c.bucket, c.key, err)
		}
		if _, err := s.Get(ctx, c.bucket, c.key); !errors.Is(err, watermark.ErrInvalidName) {
			t.Errorf("Get(%q, %q): %v, want ErrInvalidName", c.bucket, c.key, err)
		}
		if err := s.Delete(ctx, c.bucket, c.key); !errors.Is(err, watermark.ErrInvalidName) {
			t.Errorf("Delete(%q, %q): %v, want ErrInvalidName", c.bucket, c.key, err)
		}
	}
	// The widest valid names: every allowed character.
	const bucket, key = "edge_A-z09", "wmb.a=/b_C-9.3"
	mustPut(t, s, bucket, key, "v")
	mustGet(t, s, bucket, key, "v")
	for _, bucket := range []string{"", "a.b", "a b"} {
		var errs []error
		for _, err := range s.Watch(ctx, bucket) {
			errs = append(errs, err)
		}
		if len(errs) != 1 || !errors.Is(errs[0], watermark.ErrInvalidName) {
			t.Errorf("Watch(%q) yielded errors %v, want one ErrInvalidName", bucket, errs)
		}
	}
}

func testCancelledContext(t *testing.T, s watermark.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Put(ctx, "b", "k", []byte("v")); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a cancelled ctx: %v, want context.Canceled", err)
	}
	if _, err := s.Get(ctx, "b", "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled ctx: %v, want context.Canceled", err)
	}
	if err := s.Delete(ctx, "b", "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("Delete with a cancelled ctx: %v, want context.Canceled", err)
	}
	if _, err := s.Get(t.Context(), "b", "k"); !errors.Is(err, watermark.ErrNotFound) {
		t.Errorf("the cancelled Put stored a value: Get = %v", err)
	}
}

// testWatchInitialThenChanges: initial values (deleted keys and other
// buckets not among them), one OpSynced, then the changes made while the
// watcher was inside its loop body, in order; deleting a missing key is not
// announced.
func testWatchInitialThenChanges(t *testing.T, s watermark.Store) {
	mustPut(t, s, "b", "k2", "2")
	mustPut(t, s, "b", "k1", "old")
	mustPut(t, s, "b", "k1", "1")
	mustPut(t, s, "b", "gone", "x")
	mustDelete(t, s, "b", "gone")
	mustPut(t, s, "other", "x", "x")

	got := watchN(t, s, "b", 7, func(i int, u watermark.Update) {
		if u.Op != watermark.OpSynced {
			return
		}
		mustPut(t, s, "b", "k3", "3")
		mustDelete(t, s, "b", "k1")
		mustDelete(t, s, "b", "missing")
		mustPut(t, s, "other", "y", "y")
		mustPut(t, s, "b", "k4", "4")
		mustDelete(t, s, "b", "k2")
	})
	checkWatch(t, got,
		[]string{"put k1=1", "put k2=2"},
		[]string{"put k3=3", "delete k1=", "put k4=4", "delete k2="})
}

// testWatchEachChangeInOrder: when each change is seen before the next is
// made, every change of the same key is seen, in order.
func testWatchEachChangeInOrder(t *testing.T, s watermark.Store) {
	mustPut(t, s, "b", "k", "0")
	steps := []func(){
		func() { mustPut(t, s, "b", "k", "1") },
		func() { mustPut(t, s, "b", "k", "2") },
		func() { mustDelete(t, s, "b", "k") },
		func() { mustPut(t, s, "b", "k", "3") },
		func() { mustDelete(t, s, "b", "k") },
	}
	got := watchN(t, s, "b", 2+len(steps), func(i int, _ watermark.Update) {
		if i >= 1 && i-1 < len(steps) {
			steps[i-1]()
		}
	})
	checkWatch(t, got,
		[]string{"put k=0"},
		[]string{"put k=1", "put k=2", "delete k=", "put k=3", "delete k="})
}

func testWatchEmptyBucket(t *testing.T, s watermark.Store) {
	mustPut(t, s, "other", "k", "v")
	got := watchN(t, s, "b", 2, func(i int, u watermark.Update) {
		if u.Op == watermark.OpSynced {
			mustPut(t, s, "b", "k", "v")
		}
	})
	checkWatch(t, got, nil, []string{"put k=v"})
}

// testWatchersIndependent: two watchers of one bucket each see every change;
// a watcher started later starts from the values current then.
func testWatchersIndependent(t *testing.T, s watermark.Store) {
	mustPut(t, s, "b", "a", "1")
	first, _ := startWatch(t, s, "b")
	expect(t, first, "put a=1", "synced =")
	mustPut(t, s, "b", "b", "2")
	expect(t, first, "put b=2")
	second, _ := startWatch(t, s, "b")
	expectSet(t, second, "put a=1", "put b=2")
	expect(t, second, "synced =")
	mustDelete(t, s, "b", "a")
	expect(t, first, "delete a=")
	expect(t, second, "delete a=")
}

// testWatchLaggingKeepsOrder: writers do not wait for a watcher stuck in its
// loop body; afterwards the watcher sees each key's values in the order they
// were written (all of them, or only some when the store coalesces), ending
// with the last.
func testWatchLaggingKeepsOrder(t *testing.T, s watermark.Store) {
	const writers, puts = 3, 100
	last := map[string]int{}
	seen := 0
	for u, err := range s.Watch(t.Context(), "b") {
		if err != nil {
			t.Fatal(err)
		}
		if u.Op == watermark.OpSynced {
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := range puts {
						mustPut(t, s, "b", fmt.Sprintf("k%d", w), strconv.Itoa(i))
					}
				})
			}
			wg.Wait()
			continue
		}
		n, err := strconv.Atoi(string(u.Value))
		if u.Op != watermark.OpPut || err != nil {
			t.Fatalf("unexpected update %q", Render([]watermark.Update{u}))
		}
		if prev, ok := last[u.Key]; ok && n <= prev {
			t.Fatalf("key %s: value %d after %d", u.Key, n, prev)
		}
		last[u.Key] = n
		if n == puts-1 {
			if seen++; seen == writers {
				break
			}
		}
	}
	if len(last) != writers {
		t.Fatalf("saw keys %v, want %d", last, writers)
	}
}

func testWatchEndsOnCancel(t *testing.T, s watermark.Store) {
	mustPut(t, s, "b", "k", "v")
	updates, cancel := startWatch(t, s, "b")
	expect(t, updates, "put k=v", "synced =")
	cancel()
	select {
	case r, ok := <-updates:
		if ok {
			t.Fatalf("after cancel the watch yielded %q, %v; want it to end", Render([]watermark.Update{r.u}), r.err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the watch did not end after its context was cancelled")
	}
}

func testWatchCancelledBeforeStart(t *testing.T, s watermark.Store) {
	mustPut(t, s, "b", "k", "v")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for u, err := range s.Watch(ctx, "b") {
		t.Fatalf("watch with a cancelled context yielded %q, %v", Render([]watermark.Update{u}), err)
	}
}

// testWatchBreakThenWatchAgain: a loop that breaks ends its watch; a new
// watch of the same bucket sees the changes made since.
func testWatchBreakThenWatchAgain(t *testing.T, s watermark.Store) {
	mustPut(t, s, "b", "k", "1")
	checkWatch(t, watchUntilSynced(t, s, "b"), []string{"put k=1"}, nil)
	mustPut(t, s, "b", "k", "2")
	mustPut(t, s, "b", "j", "3")
	checkWatch(t, watchUntilSynced(t, s, "b"), []string{"put j=3", "put k=2"}, nil)
}

func mustPut(t *testing.T, s watermark.Store, bucket, key, value string) {
	t.Helper()
	if err := s.Put(context.Background(), bucket, key, []byte(value)); err != nil {
		t.Errorf("Put(%q, %q): %v", bucket, key, err)
	}
}

func mustDelete(t *testing.T, s watermark.Store, bucket, key string) {
	t.Helper()
	if err := s.Delete(context.Background(), bucket, key); err != nil {
		t.Errorf("Delete(%q, %q): %v", bucket, key, err)
	}
}

func mustGet(t *testing.T, s watermark.Store, bucket, key, want string) {
	t.Helper()
	got, err := s.Get(context.Background(), bucket, key)
	if err != nil || string(got) != want {
		t.Fatalf("Get(%q, %q) = %q, %v; want %q", bucket, key, got, err, want)
	}
}

// watchN ranges over a watch of bucket until it has n updates, calling
// during(i, update) in the loop body for each, and returns them.
func watchN(t *testing.T, s watermark.Store, bucket string, n int, during func(int, watermark.Update)) []watermark.Update {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	var got []watermark.Update
	for u, err := range s.Watch(ctx, bucket) {
		if err != nil {
			t.Fatalf("watch after %q: %v", Render(got), err)
		}
		got = append(got, u)
		during(len(got)-1, u)
		if len(got) == n {
			break
		}
	}
	if len(got) != n {
		t.Fatalf("watch ended (timeout %v) after %q, want %d updates", waitTimeout, Render(got), n)
	}
	return got
}

// watchUntilSynced returns the initial values of bucket and the OpSynced.
func watchUntilSynced(t *testing.T, s watermark.Store, bucket string) []watermark.Update {
	t.Helper()
	var got []watermark.Update
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	for u, err := range s.Watch(ctx, bucket) {
		if err != nil {
			t.Fatalf("watch after %q: %v", Render(got), err)
		}
		got = append(got, u)
		if u.Op == watermark.OpSynced {
			return got
		}
	}
	t.Fatalf("watch ended (timeout %v) after %q before OpSynced", waitTimeout, Render(got))
	return nil
}

// checkWatch compares a watch with the initial values (any order), one
// OpSynced, then the changes in order.
func checkWatch(t *testing.T, got []watermark.Update, initial, changes []string) {
	t.Helper()
	r := Render(got)
	i := slices.Index(r, "synced =")
	if i < 0 || slices.Contains(r[i+1:], "synced =") {
		t.Fatalf("watch = %q, want exactly one OpSynced", r)
	}
	init := slices.Sorted(slices.Values(r[:i]))
	wantInit := slices.Sorted(slices.Values(initial))
	if !slices.Equal(init, wantInit) || !slices.Equal(r[i+1:], changes) {
		t.Fatalf("watch = %q, want initial %q (any order), synced, then %q", r, wantInit, changes)
	}
}

type result struct {
	u   watermark.Update
	err error
}

// startWatch ranges over a watch on a goroutine, sending what it yields to
// the returned channel, which is closed when the watch ends. The watch ends
// when cancel is called, or at the latest when the test ends (and the test
// waits for it).
func startWatch(t *testing.T, s watermark.Store, bucket string) (_ <-chan result, cancel func()) {
	ctx, cancel := context.WithCancel(t.Context())
	out := make(chan result, 1024) // room for every update a test makes
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		for u, err := range s.Watch(ctx, bucket) {
			out <- result{u, err}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return out, cancel
}

// next receives one update of a startWatch channel.
func next(t *testing.T, updates <-chan result) string {
	t.Helper()
	select {
	case r, ok := <-updates:
		if !ok {
			t.Fatal("the watch ended")
		}
		if r.err != nil {
			t.Fatalf("the watch failed: %v", r.err)
		}
		return Render([]watermark.Update{r.u})[0]
	case <-time.After(waitTimeout):
		t.Fatalf("no update within %v", waitTimeout)
	}
	return ""
}

// expect receives the rendered updates want, in order.
func expect(t *testing.T, updates <-chan result, want ...string) {
	t.Helper()
	for _, w := range want {
		if got := next(t, updates); got != w {
			t.Fatalf("watch yielded %q, want %q", got, w)
		}
	}
}

// expectSet receives len(want) updates, in any order.
func expectSet(t *testing.T, updates <-chan result, want ...string) {
	t.Helper()
	var got []string
	for range want {
		got = append(got, next(t, updates))
	}
	slices.Sort(got)
	if w := slices.Sorted(slices.Values(want)); !slices.Equal(got, w) {
		t.Fatalf("watch yielded %q, want %q in any order", got, w)
	}
}
