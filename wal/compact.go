package wal

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"

	tidwall "github.com/tidwall/wal"
)

// Compact rewrites the log without the entries of closed windows now,
// instead of waiting for the periodic or growth-triggered compaction. It
// returns nil without rewriting when no window was closed since the last
// compaction.
func (w *WAL) Compact(ctx context.Context) error {
	c := make(chan error, 1)
	select {
	case w.compacts <- c:
	case <-w.stop:
		return ErrClosed
	case <-w.done:
		return w.stoppedErr()
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-c:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tryCompact compacts unless a Replay is reading the generation; wait says
// whether to wait for that Replay (an explicit Compact) or to skip this
// round (a periodic or growth-triggered one).
func (w *WAL) tryCompact(wait bool) error {
	if len(w.closed) == 0 {
		return nil
	}
	if wait {
		w.replayMu.Lock()
	} else if !w.replayMu.TryLock() {
		return nil
	}
	defer w.replayMu.Unlock()
	err := w.compact()
	if err != nil && w.Err() == nil {
		w.stats.compactFailures.Add(1)
	}
	return err
}

// compact rewrites the live generation into the next one, keeping the
// entries with at least one open window (with their closed windows removed)
// behind a checkpoint of the offsets and watermark, then switches to it:
//
//  1. build gen-{n+1}.tmp: checkpoint and kept entries, fsync'd, its
//     directory fsync'd;
//  2. rename it to gen-{n+1} and fsync the WAL directory: the switch (a
//     crash before it leaves gen-{n} live, after it gen-{n+1});
//  3. close tidwall/wal on gen-{n}, open it on gen-{n+1};
//  4. remove gen-{n} (Open removes it if a crash comes first).
//
// tidwall/wal cannot truncate its front to an empty log, and truncating the
// front would not drop closed windows interleaved with open ones anyway.
// A failure before step 2 leaves the log as it was; after it, the WAL
// stops (Err).
func (w *WAL) compact() error {
	old := w.genDir()
	segs, _, err := listSegments(old)
	if err != nil {
		return err
	}
	w.batchID++
	cp := checkpoint{watermark: w.cp.watermark, offsets: maps.Clone(w.cp.offsets)}
	var d decoder
	var kept []Window
	fill := func(emit func(*Entry) error) error {
		_, err := walk(old, segs, 0, w.last, walkMode{mapped: true}, func(r ref) error {
			if r.h.kind != kindMessage {
				return nil // GC events and the old checkpoint are summed up in cp
			}
			rec, err := d.decodeBody(r.h, r.e)
			if err != nil {
				return corrupt(r.file, r.index, r.off, "%v", err)
			}
			kept = kept[:0]
			for _, win := range rec.msg.Windows {
				if _, gone := w.closed[win.key()]; !gone {
					kept = append(kept, win)
				}
			}
			if len(kept) == 0 {
				return nil
			}
			rec.msg.Windows = kept
			return emit(&rec.msg)
		})
		return err
	}
	built, err := w.build(w.gen+1, &cp, w.batchID, fill)
	if errors.Is(err, errSwitchUndecided) {
		w.fail(err) // appending to either generation could lose entries
	}
	if err != nil {
		return err
	}
	// Switched: from here on a failure stops the WAL. The old generation's
	// log is abandoned, so an error closing it changes nothing.
	w.log.Close()
	w.gen++
	w.last, w.tail, w.genBytes, w.keptSize = built.last, built.tailSize, built.bytes, built.bytes
	clear(w.closed)
	if err := w.openLog(); err != nil {
		w.fail(err)
		return err
	}
	w.replay.entries = built.messages
	err = os.RemoveAll(old)
	w.stats.compactions.Add(1)
	if err != nil {
		return fmt.Errorf("wal: remove compacted generation %s (Open removes it): %w", old, err)
	}
	return nil
}

// built is what build wrote.
type built struct {
	last     uint64 // index of the last entry
	bytes    int64  // bytes of the frames
	tailSize int64  // bytes of the last segment
	messages int    // message entries
}

// build writes generation n: the checkpoint cp, then the entries fill emits,
// all as write batch id batch, synced once at the end, in gen-{n}.tmp, which
// it then renames to gen-{n} (see compact).
func (w *WAL) build(n uint64, cp *checkpoint, batch uint64, fill func(emit func(*Entry) error) error) (built, error) {
	final := filepath.Join(w.root, genName(n))
	tmp := final + tmpSuffix
	if err := os.RemoveAll(tmp); err != nil {
		return built{}, fmt.Errorf("wal: %w", err)
	}
	l, err := tidwall.Open(tmp, &tidwall.Options{NoSync: true, SegmentSize: w.cfg.segmentSize, DirPerms: 0o755, FilePerms: 0o644})
	if err != nil {
		return built{}, fmt.Errorf("wal: create generation %s: %w", tmp, err)
	}
	var (
		b        tidwall.Batch
		out      built
		inBatch  int    // entries in b
		bBytes   int    // their bytes
		pending  []byte // the last entry, held back to be flagged as the batch end
		havePend bool
	)
	flush := func(force bool) error {
		if inBatch == 0 || (!force && bBytes < 1<<20) {
			return nil
		}
		inBatch, bBytes = 0, 0
		return l.WriteBatch(&b)
	}
	put := func(e []byte, flags byte) error {
		seal(e, batch, flags)
		out.last++
		b.Write(out.last, e) // copies e
		out.bytes += frameSize(e)
		inBatch, bBytes = inBatch+1, bBytes+len(e)
		return flush(false)
	}
	push := func(e []byte) error {
		if havePend {
			if err := put(pending, 0); err != nil {
				return err
			}
		}
		pending, havePend = append(pending[:0], e...), true
		return nil
	}
	err = push(appendCheckpoint(nil, cp))
	if err == nil && fill != nil {
		var enc []byte
		err = fill(func(e *Entry) error {
			enc = appendMessage(enc[:0], e)
			out.messages++
			return push(enc)
		})
	}
	if err == nil {
		err = put(pending, flagBatchEnd)
	}
	if err == nil {
		err = flush(true)
	}
	if err == nil {
		err = l.Sync()
	}
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	var segs []segmentFile
	if err == nil {
		segs, _, err = listSegments(tmp)
	}
	if err == nil {
		var info os.FileInfo
		if info, err = os.Stat(segs[len(segs)-1].path); err == nil {
			out.tailSize = info.Size()
		}
	}
	if err == nil {
		err = writeHint(tmp, segs[len(segs)-1].first) // fsyncs tmp too
	}
	if err == nil {
		err = os.Rename(tmp, final)
		if err == nil {
			if err = syncDir(w.root); err != nil {
				// The switch may or may not be durable: undo it, or
				// report that the live generation is undecided.
				if rerr := os.RemoveAll(final); rerr != nil {
					return built{}, fmt.Errorf("%w: %s: %v (then removing it: %v)", errSwitchUndecided, final, err, rerr)
				}
				if serr := syncDir(w.root); serr != nil {
					return built{}, fmt.Errorf("%w: %s: %v (then removing it: %v)", errSwitchUndecided, final, err, serr)
				}
			}
		}
	}
	if err != nil {
		os.RemoveAll(tmp)
		return built{}, fmt.Errorf("wal: build generation %s: %w", final, err)
	}
	return out, nil
}
