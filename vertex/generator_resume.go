package vertex

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"
)

// generatorSaveEvery is the most often a resumable generator saves its
// position: a save writes and fsyncs a file, and a position saved late only
// makes the pipeline look further for what was written after it (a clean
// stop saves at Close).
const generatorSaveEvery = 20 * time.Millisecond

// A resumable generator's position is the set of messages acknowledged,
// kept exactly: every message below acked, and the spans above it that
// were acknowledged out of order (replicas share the sequence, so a later
// batch of one replica may be acknowledged before an earlier one of
// another). It is stored little-endian as
//
//	acked u64 | first u64, end u64 (a span above acked) ...
//
// spans sorted, apart from each other and from acked (a span that touched
// acked would have been merged into it). A position of 8 bytes, the only
// form earlier versions saved, has no span.
//
// Keeping the spans, rather than only acked, matters for exactly-once
// delivery: on restart the generator repeats nothing it was told is
// acknowledged, so the pipeline only has to find what it wrote and had not
// acknowledged yet (see Resumable).

// genSpan is the messages [first, end).
type genSpan struct{ first, end int64 }

// genResume is a generator's acknowledged position, when it resumes.
type genResume struct {
	mu       sync.Mutex
	store    StateStore
	acked    int64     // every message below is acknowledged
	above    []genSpan // acknowledged spans above acked, sorted, merged
	dirty    bool      // acknowledged since the last save
	lastSave time.Time

	// skip is what was acknowledged at the first Read, [0, acked) and
	// above: the spans reserve steps over. Acknowledgements after it only
	// cover messages already read.
	skipOnce sync.Once
	skip     []genSpan
}

// Resume makes the generator continue after the messages acknowledged in
// earlier runs: the pipeline calls it on durable storage, before the first
// Read. The generator then saves, as the pipeline acknowledges batches,
// the messages acknowledged (at most every 20ms, and at Close), and on the
// next run generates every other message from the first one not
// acknowledged, none of those acknowledged. WithCount still counts from
// message 0; WithRate counts from the resumed position, so a resumed run
// starts at once.
func (g *GeneratorSource[T]) Resume(store StateStore) error {
	state, ok, err := store.Load()
	if err != nil {
		return fmt.Errorf("vertex: generator: load position: %w", err)
	}
	r := &genResume{store: store, lastSave: time.Now()}
	if ok {
		if r.acked, r.above, err = decodeGenPosition(state); err != nil {
			return err
		}
	}
	g.next.Store(r.acked)
	g.base = r.acked // the rate counts this run's messages, from its first Read
	g.resume = r
	return nil
}

// decodeGenPosition checks and decodes a stored position.
func decodeGenPosition(state []byte) (acked int64, above []genSpan, err error) {
	if len(state) < 8 || (len(state)-8)%16 != 0 {
		return 0, nil, fmt.Errorf("vertex: generator: stored position has %d bytes, want 8 plus 16 per span", len(state))
	}
	u := func(i int) int64 { return int64(binary.LittleEndian.Uint64(state[i:])) }
	if acked = u(0); acked < 0 {
		return 0, nil, fmt.Errorf("vertex: generator: stored position %d is negative", acked)
	}
	prev := acked
	for i := 8; i < len(state); i += 16 {
		s := genSpan{u(i), u(i + 8)}
		if s.first <= prev || s.end <= s.first {
			return 0, nil, fmt.Errorf("vertex: generator: stored span [%d, %d) at byte %d does not follow %d", s.first, s.end, i, prev)
		}
		above = append(above, s)
		prev = s.end
	}
	return acked, above, nil
}

// Ack records that msgs, a batch Read returned (in this run or, after
// Resume, in an earlier one: the pipeline acknowledges what it finds an
// earlier run wrote), is acknowledged, and saves the new position when
// one is due. Acknowledging a message again changes nothing. It does
// nothing unless Resume was called.
func (g *GeneratorSource[T]) Ack(_ context.Context, msgs []Message[T]) error {
	r := g.resume
	if r == nil || len(msgs) == 0 {
		return nil
	}
	first, err := strconv.ParseInt(msgs[0].ID, 10, 64)
	if err != nil || first < 0 {
		return fmt.Errorf("%w: ID %q is not one the generator made", ErrUnknownAck, msgs[0].ID)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.add(genSpan{first, first + int64(len(msgs))})
	if r.dirty && time.Since(r.lastSave) >= generatorSaveEvery {
		return r.saveLocked()
	}
	return nil
}

// add records s as acknowledged; r.mu is held.
func (r *genResume) add(s genSpan) {
	s.first = max(s.first, r.acked)
	if s.end <= s.first {
		return // acknowledged already
	}
	// Merge s with every span it overlaps or touches.
	i, _ := slices.BinarySearchFunc(r.above, s.first, func(a genSpan, at int64) int {
		if a.end < at {
			return -1
		}
		return 1
	})
	j := i
	for j < len(r.above) && r.above[j].first <= s.end {
		s.first, s.end = min(s.first, r.above[j].first), max(s.end, r.above[j].end)
		j++
	}
	if j == i+1 && r.above[i] == s {
		return // within one span acknowledged already
	}
	r.above = slices.Replace(r.above, i, j, s)
	if r.above[0].first == r.acked {
		r.acked = r.above[0].end
		r.above = slices.Delete(r.above, 0, 1)
	}
	r.dirty = true
}

func (r *genResume) saveLocked() error {
	b := binary.LittleEndian.AppendUint64(make([]byte, 0, 8+16*len(r.above)), uint64(r.acked))
	for _, s := range r.above {
		b = binary.LittleEndian.AppendUint64(b, uint64(s.first))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.end))
	}
	if err := r.store.Save(b); err != nil {
		return fmt.Errorf("vertex: generator: save position %d (and %d spans above): %w", r.acked, len(r.above), err)
	}
	r.dirty, r.lastSave = false, time.Now()
	return nil
}

// Acknowledged reports whether the message with this ID was acknowledged
// in an earlier run, or since Resume (see [Acknowledged]): the generator
// will not make it again. Without Resume, nothing is.
func (g *GeneratorSource[T]) Acknowledged(id string) bool {
	r := g.resume
	i, err := strconv.ParseInt(id, 10, 64)
	if r == nil || err != nil || i < 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if i < r.acked {
		return true
	}
	k, _ := slices.BinarySearchFunc(r.above, i, func(a genSpan, at int64) int {
		if a.end <= at {
			return -1
		}
		return 1
	})
	return k < len(r.above) && r.above[k].first <= i
}

// skipAt returns the first message at or after cur that was not
// acknowledged before the first Read, and where the next acknowledged
// span after it starts (math.MaxInt64: none).
func (r *genResume) skipAt(cur int64) (next, stop int64) {
	r.skipOnce.Do(func() {
		r.mu.Lock()
		// Below acked too: the pipeline may have acknowledged messages
		// past the position Resume loaded (see Ack).
		r.skip = append([]genSpan{{0, r.acked}}, r.above...)
		r.mu.Unlock()
	})
	i, _ := slices.BinarySearchFunc(r.skip, cur, func(a genSpan, at int64) int {
		if a.end <= at {
			return -1
		}
		return 1
	})
	if i == len(r.skip) {
		return cur, math.MaxInt64
	}
	if s := r.skip[i]; s.first <= cur {
		next, i = s.end, i+1
	} else {
		next = cur
	}
	if i == len(r.skip) {
		return next, math.MaxInt64
	}
	return next, r.skip[i].first
}

// Close saves the acknowledged position of a resumable generator; the
// pipeline calls it once it has stopped. It saves even when nothing was
// acknowledged since the last save: a save from Ack ran while that batch
// was still in flight, and the store may record more with a save made
// once nothing is (the pipeline's state file records where the writes
// the position does not cover begin, and that is the tail only now).
// It is idempotent: Close again saves the same position again.
func (g *GeneratorSource[T]) Close() error {
	r := g.resume
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.saveLocked()
}
