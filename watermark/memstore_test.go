package watermark

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestMemStorePutGetDelete(t *testing.T) {
	ctx := context.Background()
	s := NewMemStore()
	if _, err := s.Get(ctx, "b", "k"); !errors.Is(err, ErrNotFound) ||
		err.Error() != `watermark: key not found: bucket "b" key "k"` {
		t.Fatalf("Get missing: %v", err)
	}
	v := []byte("one")
	if err := s.Put(ctx, "b", "k", v); err != nil {
		t.Fatal(err)
	}
	v[0] = 'X' // Put copied it
	got, err := s.Get(ctx, "b", "k")
	if err != nil || string(got) != "one" {
		t.Fatalf("Get = %q, %v; want one", got, err)
	}
	if _, err := s.Get(ctx, "other", "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get from another bucket: %v", err)
	}
	if err := s.Delete(ctx, "b", "k"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "b", "k"); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	if _, err := s.Get(ctx, "b", "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
}

func TestMemStoreNames(t *testing.T) {
	ctx := context.Background()
	s := NewMemStore()
	for _, c := range []struct{ bucket, key string }{
		{"", "k"}, {"a.b", "k"}, {"a b", "k"}, {"b", ""}, {"b", "k*"}, {"b", "k k"},
	} {
		if err := s.Put(ctx, c.bucket, c.key, nil); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Put(%q, %q): %v, want ErrInvalidName", c.bucket, c.key, err)
		}
	}
	if err := s.Put(ctx, "edge_a-1", "wmb.a=/b.3", nil); err != nil {
		t.Errorf("valid names refused: %v", err)
	}
	for _, err := range s.Watch(ctx, "bad bucket") {
		if !errors.Is(err, ErrInvalidName) {
			t.Errorf("Watch bad bucket: %v", err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Put(cancelled, "b", "k", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with cancelled ctx: %v", err)
	}
}

// render formats updates as "op key=value" for exact comparisons.
func render(us []Update) []string {
	var out []string
	for _, u := range us {
		out = append(out, fmt.Sprintf("%v %s=%s", u.Op, u.Key, u.Value))
	}
	return out
}

func TestMemStoreWatchInitialThenUpdates(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := NewMemStore()
	_ = s.Put(ctx, "b", "k2", []byte("2"))
	_ = s.Put(ctx, "b", "k1", []byte("1"))
	_ = s.Put(ctx, "other", "x", []byte("x"))

	var got []Update
	for u, err := range s.Watch(ctx, "b") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, u)
		switch len(got) {
		case 3: // synced: make changes while the watcher is registered
			_ = s.Put(ctx, "b", "k3", []byte("3"))
			_ = s.Delete(ctx, "b", "k1")
			_ = s.Delete(ctx, "b", "missing")
			_ = s.Put(ctx, "other", "y", []byte("y"))
		case 5:
			cancel()
		}
	}
	want := []string{"put k1=1", "put k2=2", "synced =", "put k3=3", "delete k1="}
	if !slices.Equal(render(got), want) {
		t.Fatalf("watch = %q, want %q", render(got), want)
	}
}

// TestMemStoreSlowWatcher: a watcher that does not read while writers run
// does not block them, and then sees the latest value of each key, in the
// order the keys first changed.
func TestMemStoreSlowWatcher(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := NewMemStore()
	var got []string
	for u, err := range s.Watch(ctx, "b") {
		if err != nil {
			t.Fatal(err)
		}
		if u.Op == OpSynced {
			// The watcher is stuck in this loop body: 3 writers x 1000 puts
			// over 2 keys must all complete.
			var wg sync.WaitGroup
			for w := range 3 {
				wg.Go(func() {
					for i := range 1000 {
						_ = s.Put(ctx, "b", fmt.Sprintf("k%d", w%2), fmt.Appendf(nil, "%d", i))
					}
				})
			}
			wg.Wait()
			_ = s.Put(ctx, "b", "k0", []byte("last0"))
			_ = s.Put(ctx, "b", "k1", []byte("last1"))
			continue
		}
		got = append(got, string(u.Value))
		if len(got) == 2 {
			break
		}
	}
	if !slices.Equal(got, []string{"last0", "last1"}) && !slices.Equal(got, []string{"last1", "last0"}) {
		t.Fatalf("slow watcher saw %q, want the last value of each key once", got)
	}
	// The watcher was unregistered when the loop broke.
	s.mu.Lock()
	n := len(s.buckets["b"].watchers)
	s.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d watchers left after the loop ended", n)
	}
}

// TestMemStoreWatchEndsOnCancel: a watcher waiting for changes returns
// when its context ends.
func TestMemStoreWatchEndsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := NewMemStore()
	done := make(chan int)
	go func() {
		n := 0
		for range s.Watch(ctx, "b") {
			n++
		}
		done <- n
	}()
	cancel()
	if n := <-done; n > 1 {
		t.Fatalf("watch yielded %d updates on an empty bucket, want at most the synced marker", n)
	}
}
