package watermark

import (
	"context"
	"errors"
	"iter"
	"sync/atomic"
	"testing"
	"time"
)

// failingStore's watches of bucket "bad" yield the current values and
// OpSynced, then fail when fail is closed (at once when synced is false:
// before OpSynced); it counts the watches started.
type failingStore struct {
	*MemStore
	fail    chan struct{}
	synced  bool
	watches atomic.Int32
}

var errWatchBroke = errors.New("watch broke")

func (s *failingStore) Watch(ctx context.Context, bucket string) iter.Seq2[Update, error] {
	if bucket != "bad" {
		return s.MemStore.Watch(ctx, bucket)
	}
	return func(yield func(Update, error) bool) {
		s.watches.Add(1)
		if s.synced && !yield(Update{Op: OpSynced}, nil) {
			return
		}
		select {
		case <-ctx.Done():
		case <-s.fail:
			yield(Update{}, errWatchBroke)
		}
	}
}

// TestFetcherFailsOnWatchError: a watch that fails is not watched again
// (the store healed what it could); the fetcher reports the failure once,
// to OnFailure and by Err, naming the bucket.
func TestFetcherFailsOnWatchError(t *testing.T) {
	store := &failingStore{MemStore: NewMemStore(), fail: make(chan struct{}), synced: true}
	reported := make(chan error, 2)
	f, err := NewFetcher(store, FetcherConfig{Edges: []string{"good", "bad"}, Partitions: []int{0},
		OnFailure: func(err error) { reported <- err }})
	must(t, err)
	must(t, f.Start(t.Context()))
	defer f.Stop()
	if f.Err() != nil {
		t.Fatalf("Err before a failure = %v", f.Err())
	}
	close(store.fail)
	var got error
	select {
	case got = <-reported:
	case <-time.After(30 * time.Second):
		t.Fatal("no failure reported in 30s")
	}
	const want = `watermark: watch of edge bucket "bad": watch broke`
	if !errors.Is(got, errWatchBroke) || got.Error() != want || f.Err() != got {
		t.Fatalf("reported %v, Err %v; want %s", got, f.Err(), want)
	}
	f.Stop()
	if n := store.watches.Load(); n != 1 || len(reported) != 0 {
		t.Fatalf("%d watches of the failed bucket, %d more reports; want 1 and none", n, len(reported))
	}
}

// TestFetcherStartFailsOnWatchError: a watch that fails before its
// initial values are in makes Start return the failure.
func TestFetcherStartFailsOnWatchError(t *testing.T) {
	store := &failingStore{MemStore: NewMemStore(), fail: make(chan struct{})}
	close(store.fail)
	f, err := NewFetcher(store, FetcherConfig{Edges: []string{"bad"}, Partitions: []int{0}})
	must(t, err)
	defer f.Stop()
	if err := f.Start(t.Context()); !errors.Is(err, errWatchBroke) {
		t.Fatalf("Start = %v, want the watch's failure", err)
	}
}
