package wal

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
)

// Compact rewrites the log without the entries of the windows closed so
// far, instead of waiting for the periodic or growth-triggered compaction,
// and returns once the new generation is live. It returns nil without
// rewriting when no window was closed since the last compaction. If a
// compaction is running, another one starts after it.
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
	case <-w.done:
		select {
		case err := <-c:
			return err
		default:
			return w.stoppedErr()
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// compaction is one compaction in progress. Its goroutine, started and
// owned by the committer, reads the live generation up to the snapshot's
// last index and writes the next generation without the snapshot's closed
// windows; appends go on meanwhile. The goroutine sends its result on errc
// and closes done; the committer then appends what was committed since the
// snapshot (tail) and switches generations. Closing quit abandons it.
//
// A compaction rewrites the log in two parts so that appends are never held
// by it: the entries up to the snapshot, rewritten in the background, and
// the tail, copied as it is by the committer at the switch (what was
// appended while the rewrite ran; the growth trigger keeps it a fraction of
// the rewrite). The tail's entries keep their write batch ids, which are
// above the compaction's, so batches stay in order for torn-tail repair.
type compaction struct {
	old     string               // the generation read
	segs    []segmentFile        // its segments at the snapshot
	last    uint64               // its last index at the snapshot
	closed  map[windowKey]Window // the windows dropped: the closed ones at the snapshot
	g       *genWriter           // the next generation, written by the goroutine
	tail    []byte               // sealed entries committed since the snapshot
	ends    []int                // end of each entry in tail
	waiters []chan error         // Compact calls answered at the switch

	quit chan struct{} // closed by the committer: stop early
	errc chan error    // buffered: the goroutine's result
	done chan struct{} // closed when the goroutine has exited
}

// errCompactionQuit ends a compaction the committer abandoned (Close).
var errCompactionQuit = errors.New("wal: compaction abandoned")

// testHookCompact, when set by a test, runs in the compaction goroutine
// before it reads the log; quit is closed when the committer abandons it.
var testHookCompact func(quit <-chan struct{})

// startCompaction snapshots what a compaction of the live generation
// needs and starts its goroutine; nil when no window was closed. wait says
// whether to wait for a Replay reading the generation (an explicit
// Compact) or to skip this round (a periodic or growth-triggered one).
// The committer calls it, with no compaction running.
func (w *WAL) startCompaction(wait bool, waiters []chan error) *compaction {
	if len(w.closed) == 0 {
		for _, ch := range waiters {
			ch <- nil // nothing to drop
		}
		return nil
	}
	// Held until the switch: the compaction removes the generation a
	// Replay reads.
	if wait {
		w.replayMu.Lock()
	} else if !w.replayMu.TryLock() {
		return nil
	}
	c, err := w.snapshot()
	if err != nil {
		w.replayMu.Unlock()
		w.stats.compactFailures.Add(1)
		for _, ch := range waiters {
			ch <- err
		}
		return nil
	}
	c.waiters = waiters
	c.quit, c.errc, c.done = make(chan struct{}), make(chan error, 1), make(chan struct{})
	cp := w.cp.clone()
	go func() {
		defer close(c.done)
		if testHookCompact != nil {
			testHookCompact(c.quit)
		}
		c.errc <- c.rewrite(&cp)
	}()
	return c
}

// snapshot fixes what a compaction reads and drops, and opens the next
// generation for it.
func (w *WAL) snapshot() (*compaction, error) {
	segs, _, err := listSegments(w.genDir())
	if err != nil {
		return nil, err
	}
	w.batchID++
	g, err := w.newGen(w.gen+1, w.batchID)
	if err != nil {
		return nil, err
	}
	return &compaction{old: w.genDir(), segs: segs, last: w.last, closed: maps.Clone(w.closed), g: g}, nil
}

func (c *checkpoint) clone() checkpoint {
	return checkpoint{watermark: c.watermark, offsets: maps.Clone(c.offsets)}
}

// rewrite writes the checkpoint cp and every entry up to the snapshot that
// has an open window, with its closed windows removed.
func (c *compaction) rewrite(cp *checkpoint) error {
	var d decoder
	var kept []Window
	n := 0
	return c.g.fill(cp, func(emit func(*Entry) error) error {
		_, err := walk(c.old, c.segs, 0, c.last, walkMode{mapped: true}, func(r ref) error {
			if n++; n%4096 == 0 {
				select {
				case <-c.quit:
					return errCompactionQuit
				default:
				}
			}
			if r.h.kind != kindMessage {
				return nil // GC events and the old checkpoint are summed up in cp
			}
			rec, err := d.decodeBody(r.h, r.e)
			if err != nil {
				return corrupt(r.file, r.index, r.off, "%v", err)
			}
			kept = kept[:0]
			for _, win := range rec.msg.Windows {
				if _, gone := c.closed[win.key()]; !gone {
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
	})
}

// noteCommitted keeps the sealed entry e, just committed, for the tail of
// the running compaction.
func (c *compaction) noteCommitted(e []byte) {
	c.tail = append(c.tail, e...)
	c.ends = append(c.ends, len(c.tail))
}

// finishCompaction takes the result of c's goroutine, which has exited:
// on success it appends the tail and switches to the new generation. It
// answers the Compact calls waiting for c and returns the error, which
// stops the WAL (Err) only when the switch happened or is undecided.
func (w *WAL) finishCompaction(c *compaction, err error) error {
	defer w.replayMu.Unlock()
	if err == nil {
		err = c.writeTail()
	}
	var b built
	if err == nil {
		b, err = c.g.finish()
	} else {
		c.g.abort()
		err = fmt.Errorf("wal: build generation %s: %w", c.g.final, err)
	}
	if err == nil {
		err = w.switchTo(b, c.old, c.closed)
	} else if errors.Is(err, errSwitchUndecided) {
		w.fail(err) // appending to either generation could lose entries
	}
	if err != nil && w.Err() == nil {
		w.stats.compactFailures.Add(1)
	}
	for _, ch := range c.waiters {
		ch <- err
	}
	return err
}

// writeTail copies the entries committed since the snapshot, sealed as they
// are, after the rewritten ones.
func (c *compaction) writeTail() error {
	start := 0
	for _, end := range c.ends {
		if err := c.g.write(c.tail[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// abandon stops c's goroutine and drops what it wrote; the Compact calls
// waiting for it get err.
func (w *WAL) abandon(c *compaction, err error) {
	close(c.quit)
	<-c.done
	c.g.abort()
	w.replayMu.Unlock()
	for _, ch := range c.waiters {
		ch <- err
	}
}

// compact rewrites the live generation into the next one now, in the
// calling goroutine: Open's compaction, before the committer runs.
func (w *WAL) compact() error {
	c, err := w.snapshot()
	if err != nil {
		return err
	}
	w.replayMu.Lock()
	cp := w.cp.clone()
	return w.finishCompaction(c, c.rewrite(&cp))
}

// switchTo makes the generation just built live: closes tidwall/wal on the
// old one, opens it on the new one, forgets the windows the compaction
// dropped (those closed since stay, for the next one) and removes the old
// generation. A failure here stops the WAL.
//
// The whole compaction, as a sequence:
//
//  1. build gen-{n+1}.tmp: checkpoint and kept entries (in the background),
//     then the tail, fsync'd, its directory fsync'd;
//  2. rename it to gen-{n+1} and fsync the WAL directory: the switch (a
//     crash before it leaves gen-{n} live, after it gen-{n+1});
//  3. close tidwall/wal on gen-{n}, open it on gen-{n+1};
//  4. remove gen-{n} (Open removes it if a crash comes first).
//
// tidwall/wal cannot truncate its front to an empty log, and truncating the
// front would not drop closed windows interleaved with open ones anyway.
func (w *WAL) switchTo(b built, old string, dropped map[windowKey]Window) error {
	// The old generation's log is abandoned, so an error closing it
	// changes nothing.
	w.log.Close()
	w.gen++
	w.marker = 0 // a new generation has no clean-close record
	w.last, w.tail, w.genBytes, w.keptSize = b.last, b.tailSize, b.bytes, b.bytes
	for k := range dropped {
		delete(w.closed, k)
	}
	if err := w.openLog(); err != nil {
		w.fail(err)
		return err
	}
	w.replay.entries = b.messages
	err := os.RemoveAll(old)
	w.stats.compactions.Add(1)
	if err != nil {
		return fmt.Errorf("wal: remove compacted generation %s (Open removes it): %w", old, err)
	}
	return nil
}
