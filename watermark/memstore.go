package watermark

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"
)

// MemStore is the in-memory [Store]: the default for a pipeline in one
// process. It is safe for concurrent use and its zero value is ready.
//
// Writers never wait for watchers: each watcher has a queue holding at most
// one pending change per key (a newer change of a key replaces the pending
// one in place), so a slow watcher costs memory bounded by the number of keys
// and sees the latest value of every key, in the order the keys first
// changed since its last read.
type MemStore struct {
	mu      sync.Mutex
	buckets map[string]*memBucket // guarded by mu
}

type memBucket struct {
	kv       map[string][]byte
	watchers map[*memWatcher]struct{}
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{} }

// bucket returns the named bucket, creating it. s.mu must be held.
func (s *MemStore) bucket(name string) *memBucket {
	if s.buckets == nil {
		s.buckets = map[string]*memBucket{}
	}
	b := s.buckets[name]
	if b == nil {
		b = &memBucket{kv: map[string][]byte{}, watchers: map[*memWatcher]struct{}{}}
		s.buckets[name] = b
	}
	return b
}

func checkBucketKey(bucket, key string) error {
	if err := validBucket(bucket); err != nil {
		return err
	}
	if err := validKey(key); err != nil {
		return fmt.Errorf("%w (bucket %q)", err, bucket)
	}
	return nil
}

// Put sets key of bucket to a copy of value.
func (s *MemStore) Put(ctx context.Context, bucket, key string, value []byte) error {
	if err := checkBucketKey(bucket, key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	v := slices.Clone(value)
	if v == nil {
		v = []byte{} // a put of nothing is still a value, not a delete
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bucket(bucket)
	b.kv[key] = v
	for w := range b.watchers {
		w.push(Update{Op: OpPut, Key: key, Value: v})
	}
	return nil
}

// Get returns the value of key; a missing key is ErrNotFound.
func (s *MemStore) Get(ctx context.Context, bucket, key string) ([]byte, error) {
	if err := checkBucketKey(bucket, key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.buckets[bucket]; b != nil {
		if v, ok := b.kv[key]; ok {
			return v, nil
		}
	}
	return nil, fmt.Errorf("%w: bucket %q key %q", ErrNotFound, bucket, key)
}

// Delete removes key; a missing key is not an error (and not announced).
func (s *MemStore) Delete(ctx context.Context, bucket, key string) error {
	if err := checkBucketKey(bucket, key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[bucket]
	if b == nil {
		return nil
	}
	if _, ok := b.kv[key]; !ok {
		return nil
	}
	delete(b.kv, key)
	for w := range b.watchers {
		w.push(Update{Op: OpDelete, Key: key})
	}
	return nil
}

// Watch implements [Store.Watch]. The watcher is registered, and the
// initial values taken, when the range loop starts; initial keys come in
// sorted order. No goroutine is started: the range loop itself waits for
// changes.
func (s *MemStore) Watch(ctx context.Context, bucket string) iter.Seq2[Update, error] {
	return func(yield func(Update, error) bool) {
		if err := validBucket(bucket); err != nil {
			yield(Update{}, err)
			return
		}
		w := &memWatcher{signal: make(chan struct{}, 1), pending: map[string]int{}}
		s.mu.Lock()
		b := s.bucket(bucket)
		keys := make([]string, 0, len(b.kv))
		for k := range b.kv {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			w.queue = append(w.queue, Update{Op: OpPut, Key: k, Value: b.kv[k]})
		}
		w.queue = append(w.queue, Update{Op: OpSynced})
		b.watchers[w] = struct{}{}
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(b.watchers, w)
			s.mu.Unlock()
		}()

		var batch []Update
		for {
			batch = w.take(batch[:0])
			for _, u := range batch {
				if ctx.Err() != nil || !yield(u, nil) {
					return
				}
			}
			if len(batch) > 0 {
				continue
			}
			select {
			case <-ctx.Done():
				return
			case <-w.signal:
			}
		}
	}
}

// memWatcher is one Watch's queue. Writers push under mu without blocking;
// the watching range loop takes everything queued at once.
type memWatcher struct {
	mu      sync.Mutex
	queue   []Update       // guarded by mu
	pending map[string]int // guarded by mu: key -> index in queue
	signal  chan struct{}  // capacity 1: "queue may be non-empty"
}

// push queues u, replacing a queued change of the same key (coalescing), and
// wakes the watcher without ever blocking.
func (w *memWatcher) push(u Update) {
	w.mu.Lock()
	if i, ok := w.pending[u.Key]; ok {
		w.queue[i] = u
	} else {
		w.pending[u.Key] = len(w.queue)
		w.queue = append(w.queue, u)
	}
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// take moves the queued updates to dst (swapping buffers, so a steady watch
// does not allocate) and forgets the pending keys.
func (w *memWatcher) take(dst []Update) []Update {
	w.mu.Lock()
	defer w.mu.Unlock()
	dst, w.queue = w.queue, dst
	clear(w.pending)
	return dst
}
