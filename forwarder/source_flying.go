package forwarder

import (
	"slices"
	"sync"
	"time"
)

// flyingBatches are a source replica's batches from their stamp to their
// completion (or drop), in read order, each with the replica's watermark
// it was stamped with. Watermarks never decrease in read order, so the
// oldest batch's is the lowest in flight: what an idle WMB may claim
// while the batch's records may still be stored (see
// sourceReplica.idleWatermark). At most sourceStagedBatches are in flight,
// so a removal's scan is short.
type flyingBatches[T any] struct {
	mu      sync.Mutex
	batches []*sourceBatch[T]
	marks   []time.Time // marks[i] is batches[i]'s watermark
}

// take stamps b with stamp, which returns the replica's watermark after
// the stamp, and adds b. The stamp runs under the lock: the idle loop sees
// the raised watermark only with b in flight.
func (f *flyingBatches[T]) take(b *sourceBatch[T], stamp func() time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches = append(f.batches, b)
	f.marks = append(f.marks, stamp())
}

// land removes b once its writes are complete or abandoned; a batch not in
// flight changes nothing.
func (f *flyingBatches[T]) land(b *sourceBatch[T]) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i := slices.Index(f.batches, b); i >= 0 {
		f.batches = slices.Delete(f.batches, i, i+1)
		f.marks = slices.Delete(f.marks, i, i+1)
	}
}

// oldest returns the watermark of the oldest batch in flight (zero when it
// was stamped before the replica had one: nothing may be claimed yet); ok
// is false when no batch is in flight.
func (f *flyingBatches[T]) oldest() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.marks) == 0 {
		return time.Time{}, false
	}
	return f.marks[0], true
}
