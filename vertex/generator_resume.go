package vertex

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/runnel-dev/runnel/internal/spans"
)

// generatorSaveEvery is the most often a resumable generator saves its
// position: a save writes and fsyncs a file, and a position saved late only
// makes the pipeline look further for what was written after it (a clean
// stop saves at Close).
const generatorSaveEvery = 20 * time.Millisecond

// A resumable generator's position is the set of messages acknowledged,
// kept exactly (internal/spans): every message below a low mark, and the
// spans above it that were acknowledged out of order (replicas share the
// sequence, so a later batch of one replica may be acknowledged before an
// earlier one of another). It is stored in the set's form; a position of 8
// bytes, the only form earlier versions saved, has no span.
//
// Keeping the spans, rather than only the low mark, matters for
// exactly-once delivery: on restart the generator repeats nothing it was
// told is acknowledged, so the pipeline only has to find what it wrote and
// had not acknowledged yet (see Resumable).

// genResume is a generator's acknowledged position, when it resumes.
type genResume struct {
	mu       sync.Mutex
	store    StateStore
	acked    spans.Set // the messages acknowledged
	dirty    bool      // acknowledged since the last save
	lastSave time.Time

	// skip is what was acknowledged at the first Read: the spans reserve
	// steps over. Acknowledgements after it only cover messages already
	// read.
	skipOnce sync.Once
	skip     spans.Set
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
		if r.acked, err = spans.Decode(state); err != nil {
			return fmt.Errorf("vertex: generator: %w", err)
		}
	}
	g.next.Store(r.acked.Low)
	g.base = r.acked.Low // the rate counts this run's messages, from its first Read
	g.resume = r
	return nil
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
	if r.acked.Add(spans.Span{First: first, End: first + int64(len(msgs))}) {
		r.dirty = true
	}
	if r.dirty && time.Since(r.lastSave) >= generatorSaveEvery {
		return r.saveLocked()
	}
	return nil
}

func (r *genResume) saveLocked() error {
	b := r.acked.Append(make([]byte, 0, 8+16*len(r.acked.Above)))
	if err := r.store.Save(b); err != nil {
		return fmt.Errorf("vertex: generator: save position %d (and %d spans above): %w", r.acked.Low, len(r.acked.Above), err)
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
	return r.acked.Contains(i)
}

// skipAt returns the first message at or after cur that was not
// acknowledged before the first Read, and where the next acknowledged
// span after it starts (math.MaxInt64: none).
func (r *genResume) skipAt(cur int64) (next, stop int64) {
	r.skipOnce.Do(func() {
		r.mu.Lock()
		// Everything acknowledged, below the position Resume loaded too:
		// the pipeline may have acknowledged messages past it (see Ack).
		r.skip = r.acked.Clone()
		r.mu.Unlock()
	})
	return r.skip.Gap(cur)
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
