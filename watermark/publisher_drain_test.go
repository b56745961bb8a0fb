package watermark

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// wmbStore is a MemStore whose WMB puts go through hook first (heartbeats
// pass straight through), and which records the WMBs put.
type wmbStore struct {
	*MemStore
	hook func(ctx context.Context, w WMB) error
	mu   sync.Mutex
	puts []WMB // WMBs the hook let through, in order
}

func (s *wmbStore) Put(ctx context.Context, bucket, key string, v []byte) error {
	if !strings.HasPrefix(key, wmbPrefix) {
		return s.MemStore.Put(ctx, bucket, key, v)
	}
	var w WMB
	if err := w.UnmarshalBinary(v); err != nil {
		return err
	}
	if err := s.hook(ctx, w); err != nil {
		return err
	}
	s.mu.Lock()
	s.puts = append(s.puts, w)
	s.mu.Unlock()
	return s.MemStore.Put(ctx, bucket, key, v)
}

func (s *wmbStore) stored() []WMB {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]WMB(nil), s.puts...)
}

func startedPublisher(t *testing.T, store Store) *Publisher {
	t.Helper()
	p, err := NewPublisher(store, PublisherConfig{
		Processor: "map-0", Edges: []PublisherEdge{{Bucket: "e", Partitions: 1}}, HeartbeatInterval: time.Hour,
	})
	must(t, err)
	must(t, p.Start(t.Context()))
	return p
}

// TestPublishDoesNotWaitForStore: while the goroutine's put of the first
// WMB hangs in the store, a hundred more publishes return, each replacing
// the one waiting in the slot; once the store answers, the latest is put,
// and nothing between.
func TestPublishDoesNotWaitForStore(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	store := &wmbStore{MemStore: NewMemStore(), hook: func(ctx context.Context, w WMB) error {
		once.Do(func() {
			close(entered)
			<-release
		})
		return nil
	}}
	p := startedPublisher(t, store)
	must(t, p.Publish("e", 0, 1, ms(1)))
	<-entered // the goroutine is inside the store with WMB 1
	for i := int64(2); i <= 100; i++ {
		must(t, p.Publish("e", 0, i, ms(i)))
	}
	close(release)
	must(t, p.Flush(t.Context()))
	want := []WMB{{Offset: 1, Watermark: ms(1)}, {Offset: 100, Watermark: ms(100)}}
	if got := store.stored(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("store got %v, want %v", got, want)
	}
	must(t, p.Stop(t.Context()))
}

// TestPublisherRetriesFailedPut: the store fails the first three puts of a
// WMB; the goroutine retries it without any further Publish (it used to
// wait for the next advance, which may never come), so the WMB is put on
// the fourth attempt, and only once.
func TestPublisherRetriesFailedPut(t *testing.T) {
	var mu sync.Mutex
	attempts := 0
	down := errors.New("store down")
	store := &wmbStore{MemStore: NewMemStore(), hook: func(context.Context, WMB) error {
		mu.Lock()
		defer mu.Unlock()
		attempts++
		if attempts <= 3 {
			return down
		}
		return nil
	}}
	p := startedPublisher(t, store)
	defer func() { must(t, p.Stop(t.Context())) }()
	must(t, p.Publish("e", 0, 5, ms(50)))
	deadline := time.Now().Add(30 * time.Second)
	for len(store.stored()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the WMB was never put")
		}
		time.Sleep(time.Millisecond)
	}
	must(t, p.Flush(t.Context())) // nothing pending: no attempt
	mu.Lock()
	defer mu.Unlock()
	if got := store.stored(); attempts != 4 || len(got) != 1 || got[0] != (WMB{Offset: 5, Watermark: ms(50)}) {
		t.Fatalf("%d attempts, stored %v; want 4 attempts and the WMB once", attempts, got)
	}
}
