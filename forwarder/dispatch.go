package forwarder

import (
	"cmp"

	"github.com/runnel-dev/runnel/internal/keys"
)

// Dispatch: how a replica's reader hands each batch to the workers, in
// chunks (see chunking and replica).

// dispatch hands a read batch to the workers (it owns the batch's
// permits from then on); it returns false once the replica is failing.
// It runs on the reader's goroutine. What a replica must do to every input
// before any worker sees it belongs here.
func (rp *replica[T]) dispatch(items []inflight[T]) bool {
	switch rp.stage.mode {
	case chunkWhole:
		return rp.send(rp.chans[0], items)
	case chunkByKey:
		return rp.dispatchByKey(items)
	}
	return rp.dispatchSpread(items)
}

// send hands chunk to the workers of ch, or nacks it once the replica is
// failing.
func (rp *replica[T]) send(ch chan []inflight[T], chunk []inflight[T]) bool {
	select {
	case ch <- chunk:
		return true
	case <-rp.ctx.Done():
		rp.r.nack(chunk)
		return false
	}
}

// dispatchSpread cuts items into equal chunks for any worker.
func (rp *replica[T]) dispatchSpread(items []inflight[T]) bool {
	chunks := cmp.Or(rp.stage.chunks, rp.workers())
	size := (len(items) + chunks - 1) / chunks
	for len(items) > 0 {
		n := min(size, len(items))
		if !rp.send(rp.chans[0], items[:n:n]) {
			rp.r.nack(items[n:])
			return false
		}
		items = items[n:]
	}
	return rp.ctx.Err() == nil
}

// dispatchByKey gives each worker the messages of its keys. Each worker's
// share is copied into a pooled batch of its own, which its acks return to
// the pool: steady keyed reading does not allocate (a slice per worker and
// batch cost a reduce vertex 400 B per message).
func (rp *replica[T]) dispatchByKey(items []inflight[T]) bool {
	r, per := rp.r, rp.per
	for i := range items {
		// The hash the writer routed by, spread over the workers: the
		// same worker for the same keys in every process, nil and {""}
		// told apart (internal/keys).
		k := keys.Spread(keys.Hash(items[i].msg.Keys), len(per))
		b := per[k]
		if b == nil {
			b = r.pooledBatch()
			b.read = items[i].owner.read // the share's processing time starts at the read
			per[k] = b
		}
		it := items[i]
		it.owner = b
		b.items = append(b.items, it)
	}
	// The batch is copied out: it goes back to the pool now; the copies
	// carry the permits.
	r.recycle(items)
	ok := true
	for k, b := range per {
		if b == nil {
			continue
		}
		per[k] = nil
		chunk := b.items
		b.left.Store(int64(len(chunk)))
		if !ok {
			r.nack(chunk)
			continue
		}
		ok = rp.send(rp.chans[k], chunk)
	}
	return ok && rp.ctx.Err() == nil
}

// pooledBatch returns an empty batch from the reader's pool (a new one
// when the pool has none).
func (r *reader[T]) pooledBatch() *batchBuf[T] {
	if b, _ := r.pool.Get().(*batchBuf[T]); b != nil {
		return b
	}
	return &batchBuf[T]{items: make([]inflight[T], 0, r.batch)}
}
