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
//
// [StartWatch] serves an implementation's own tests (a restarted server, a
// dropped connection): a watch on its own goroutine, with expectations that
// fail the test instead of hanging it.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/watermark"
)

// waitTimeout bounds every wait for a watch, so a broken store fails a test
// instead of hanging it. It is not a timing assertion: a correct store is
// orders of magnitude faster, except where a test waits for a JetStream
// client to notice a consumer gone (two missed 5s heartbeats).
const waitTimeout = 60 * time.Second

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
		{"ConcurrentDeletesAnnounceOnce", testConcurrentDeletesAnnounceOnce},
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
		{strings.Repeat("b", 253), "k"},
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
	// The widest valid names: every allowed character, the longest bucket.
	const bucket, key = "edge_A-z09", "wmb.a=/b_C-9.3"
	mustPut(t, s, bucket, key, "v")
	mustGet(t, s, bucket, key, "v")
	long := strings.Repeat("b", 252)
	mustPut(t, s, long, key, "v")
	mustGet(t, s, long, key, "v")
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
	first := StartWatch(t, s, "b")
	first.Expect("put a=1", "synced =")
	mustPut(t, s, "b", "b", "2")
	first.Expect("put b=2")
	second := StartWatch(t, s, "b")
	second.ExpectSet("put a=1", "put b=2")
	second.Expect("synced =")
	mustDelete(t, s, "b", "a")
	first.Expect("delete a=")
	second.Expect("delete a=")
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
	w := StartWatch(t, s, "b")
	w.Expect("put k=v", "synced =")
	w.Cancel()
	w.ExpectEnd()
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

// testConcurrentDeletesAnnounceOnce: deletes of one key racing each other
// all succeed, and watchers see one deletion (the others found no key).
func testConcurrentDeletesAnnounceOnce(t *testing.T, s watermark.Store) {
	mustPut(t, s, "b", "k", "v")
	w := StartWatch(t, s, "b")
	w.Expect("put k=v", "synced =")
	var wg sync.WaitGroup
	start := make(chan struct{}) // released together, so their reads overlap
	for range 32 {
		wg.Go(func() {
			<-start
			mustDelete(t, s, "b", "k")
		})
	}
	close(start)
	wg.Wait()
	mustPut(t, s, "b", "after", "1")
	w.Expect("delete k=", "put after=1")
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

// Watch is a watch ranged over on a goroutine of its own, for tests that
// make changes while it runs and then check what it yielded.
type Watch struct {
	t       *testing.T
	updates chan result // closed when the watch ends
	cancel  context.CancelFunc
}

// StartWatch starts watching bucket. The watch ends on Cancel, or at the
// latest when the test ends (which waits for it).
func StartWatch(t *testing.T, s watermark.Store, bucket string) *Watch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watch{t: t, updates: make(chan result, 1024), cancel: cancel}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(w.updates)
		for u, err := range s.Watch(ctx, bucket) {
			w.updates <- result{u, err}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return w
}

// Cancel ends the watch's context.
func (w *Watch) Cancel() { w.cancel() }

// receive returns the next pair the watch yields; ok is false when the
// watch has ended. It fails the test after waitTimeout.
func (w *Watch) receive() (r result, ok bool) {
	w.t.Helper()
	select {
	case r, ok = <-w.updates:
		return r, ok
	case <-time.After(waitTimeout):
		w.t.Fatalf("the watch yielded nothing and did not end within %v", waitTimeout)
		return result{}, false
	}
}

// next returns the next update, rendered; the watch must neither end nor
// fail.
func (w *Watch) next() string {
	w.t.Helper()
	r, ok := w.receive()
	if !ok {
		w.t.Fatal("the watch ended")
	}
	if r.err != nil {
		w.t.Fatalf("the watch failed: %v", r.err)
	}
	return Render([]watermark.Update{r.u})[0]
}

// Expect receives updates rendered as want ("put k=v", "delete k=",
// "synced ="), in order.
func (w *Watch) Expect(want ...string) {
	w.t.Helper()
	for _, x := range want {
		if got := w.next(); got != x {
			w.t.Fatalf("watch yielded %q, want %q", got, x)
		}
	}
}

// ExpectSet receives len(want) updates, in any order.
func (w *Watch) ExpectSet(want ...string) {
	w.t.Helper()
	var got []string
	for range want {
		got = append(got, w.next())
	}
	slices.Sort(got)
	if x := slices.Sorted(slices.Values(want)); !slices.Equal(got, x) {
		w.t.Fatalf("watch yielded %q, want %q in any order", got, x)
	}
}

// ExpectEnd waits for the watch to end without yielding anything more.
func (w *Watch) ExpectEnd() {
	w.t.Helper()
	if r, ok := w.receive(); ok {
		w.t.Fatalf("watch yielded %q, %v; want it to end", Render([]watermark.Update{r.u}), r.err)
	}
}

// ExpectFailure waits for the watch to yield an error, as its last pair,
// and end; it returns the error.
func (w *Watch) ExpectFailure() error {
	w.t.Helper()
	r, ok := w.receive()
	if !ok || r.err == nil {
		w.t.Fatalf("watch yielded %q (ended: %v); want an error", Render([]watermark.Update{r.u}), !ok)
	}
	w.ExpectEnd()
	return r.err
}
