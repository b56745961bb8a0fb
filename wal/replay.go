package wal

import (
	"iter"
)

// replaySnapshot is what Replay reads, fixed by Open.
type replaySnapshot struct {
	dir     string
	limit   uint64 // last index at Open
	entries int    // message entries (of open windows after Open's compaction)
}

// Replay yields every entry of an open window in append order, as Open
// found them, for the reduce to rebuild its windows (session merges
// included) before it resumes reading; Recovered says what else to know.
// Open compacted away every window a GC event closed, so each entry has
// open windows only.
//
// Each entry's Value is valid only until the loop advances (see Entry):
// segments are mapped, not copied, so a replay allocates next to nothing.
// Open checked every entry's crc moments before, under the lock that keeps
// other writers out, so Replay does not check them again (a third of its
// cost); bytes that no longer parse end the sequence with a *CorruptError.
// Replay must run before the first Append or GC; after it, it yields
// ErrReplayAfterAppend.
func (w *WAL) Replay() iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		if w.appended.Load() {
			yield(Entry{}, ErrReplayAfterAppend)
			return
		}
		w.replayMu.RLock()
		defer w.replayMu.RUnlock()
		s := &w.replay
		segs, _, err := listSegments(s.dir)
		if err != nil {
			yield(Entry{}, err)
			return
		}
		var d decoder
		stopped := false
		_, err = walk(s.dir, segs, 0, s.limit, walkMode{mapped: true, verified: true}, func(r ref) error {
			if r.h.kind != kindMessage {
				return nil
			}
			rec, err := d.decodeBody(r.h, r.e)
			if err != nil {
				return corrupt(r.file, r.index, r.off, "%v", err)
			}
			if !yield(rec.msg, nil) {
				stopped = true
				return errStopReplay
			}
			return nil
		})
		if err != nil && !stopped {
			yield(Entry{}, err)
		}
	}
}
