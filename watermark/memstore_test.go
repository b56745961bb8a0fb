package watermark_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/runnel-dev/runnel/watermark"
	"github.com/runnel-dev/runnel/watermark/storetest"
)

// TestMemStoreContract runs the Store contract suite, the one the
// JetStream KV store runs too.
func TestMemStoreContract(t *testing.T) {
	storetest.Run(t, func(*testing.T) watermark.Store { return watermark.NewMemStore() })
	// The zero value is ready too.
	storetest.Run(t, func(*testing.T) watermark.Store { return new(watermark.MemStore) })
}

func TestMemStoreNotFoundMessage(t *testing.T) {
	_, err := watermark.NewMemStore().Get(context.Background(), "b", "k")
	if want := `watermark: key not found: bucket "b" key "k"`; err == nil || err.Error() != want {
		t.Fatalf("Get missing: %v, want %s", err, want)
	}
}

// TestMemStoreSlowWatcherCoalesces: a watcher that does not read while
// writers run does not block them, and then sees only the latest value of
// each key, once (MemStore coalesces per key; the contract suite checks only
// that order is kept).
func TestMemStoreSlowWatcherCoalesces(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := watermark.NewMemStore()
	var got []string
	for u, err := range s.Watch(ctx, "b") {
		if err != nil {
			t.Fatal(err)
		}
		if u.Op == watermark.OpSynced {
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
}
