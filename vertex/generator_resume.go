package vertex

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// generatorSaveEvery is the most often a resumable generator saves its
// position: a save writes and fsyncs a file, and a position saved late only
// repeats messages after a crash (a clean stop saves at Close).
const generatorSaveEvery = 20 * time.Millisecond

// genResume is a generator's acknowledged position, when it resumes.
type genResume struct {
	mu       sync.Mutex
	store    StateStore
	acked    int64           // every message below is acknowledged
	above    map[int64]int64 // acknowledged batches above acked: first -> end
	saved    int64           // the position last saved
	lastSave time.Time
}

// Resume makes the generator continue after the messages acknowledged in
// earlier runs: the pipeline calls it on durable storage, before the first
// Read. The generator then saves, as the pipeline acknowledges batches,
// the first message not yet acknowledged (at most every 20ms, and at
// Close), and starts there on the next run. Messages acknowledged out of
// order above a gap are generated again after a crash: at least once.
// Count still counts from message 0; Rate counts from the resumed
// position, so a resumed run starts at once.
func (g *GeneratorSource[T]) Resume(store StateStore) error {
	state, ok, err := store.Load()
	if err != nil {
		return fmt.Errorf("vertex: generator: load position: %w", err)
	}
	var pos int64
	if ok {
		if len(state) != 8 {
			return fmt.Errorf("vertex: generator: stored position has %d bytes, want 8", len(state))
		}
		if pos = int64(binary.LittleEndian.Uint64(state)); pos < 0 {
			return fmt.Errorf("vertex: generator: stored position %d is negative", pos)
		}
	}
	g.next.Store(pos)
	g.base = pos // the rate counts this run's messages, from its first Read
	g.resume = &genResume{store: store, acked: pos, saved: pos, above: map[int64]int64{}, lastSave: time.Now()}
	return nil
}

// Ack records that msgs, a batch Read returned, is acknowledged, and saves
// the new position when one is due. It does nothing unless Resume was
// called.
func (g *GeneratorSource[T]) Ack(_ context.Context, msgs []Message[T]) error {
	r := g.resume
	if r == nil || len(msgs) == 0 {
		return nil
	}
	first, err := strconv.ParseInt(msgs[0].ID, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: ID %q is not one the generator made", ErrUnknownAck, msgs[0].ID)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.above[first] = first + int64(len(msgs))
	for {
		end, ok := r.above[r.acked]
		if !ok {
			break
		}
		delete(r.above, r.acked)
		r.acked = end
	}
	if r.acked > r.saved && time.Since(r.lastSave) >= generatorSaveEvery {
		return r.saveLocked()
	}
	return nil
}

func (r *genResume) saveLocked() error {
	if err := r.store.Save(binary.LittleEndian.AppendUint64(nil, uint64(r.acked))); err != nil {
		return fmt.Errorf("vertex: generator: save position %d: %w", r.acked, err)
	}
	r.saved, r.lastSave = r.acked, time.Now()
	return nil
}

// Close saves the acknowledged position of a resumable generator; the
// pipeline calls it once it has stopped. It is idempotent.
func (g *GeneratorSource[T]) Close() error {
	r := g.resume
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.acked == r.saved {
		return nil
	}
	return r.saveLocked()
}
