package wal

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/runnel-dev/runnel/internal/fsutil"
	tidwall "github.com/tidwall/wal"
)

// genWriter writes a new generation in gen-{n}.tmp, unsynced until finish,
// which renames it to gen-{n}: the first generation of a new log, and the
// one a compaction builds.
type genWriter struct {
	w          *WAL // for its root and segment size only
	final, tmp string
	l          *tidwall.Log
	b          tidwall.Batch
	batch      uint64 // the write batch id of the entries push seals
	out        built
	inBatch    int    // entries in b
	bBytes     int    // their bytes
	held       []byte // the last pushed entry, held back to be flagged as the batch end
	holding    bool
}

// built is what a genWriter wrote.
type built struct {
	last     uint64 // index of the last entry
	bytes    int64  // bytes of the frames
	tailSize int64  // bytes of the last segment
	messages int    // message entries pushed
}

// newGen starts generation n, whose pushed entries are write batch batch.
func (w *WAL) newGen(n, batch uint64) (*genWriter, error) {
	final := filepath.Join(w.root, genName(n))
	g := &genWriter{w: w, final: final, tmp: final + tmpSuffix, batch: batch}
	if err := os.RemoveAll(g.tmp); err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	l, err := tidwall.Open(g.tmp, &tidwall.Options{NoSync: true, SegmentSize: w.cfg.segmentSize, DirPerms: 0o755, FilePerms: 0o644})
	if err != nil {
		os.RemoveAll(g.tmp)
		return nil, fmt.Errorf("wal: create generation %s: %w", g.tmp, err)
	}
	g.l = l
	return g, nil
}

// write adds the sealed entry e, writing a batch of about 1 MiB at a time.
func (g *genWriter) write(e []byte) error {
	g.out.last++
	g.b.Write(g.out.last, e) // copies e
	g.out.bytes += frameSize(e)
	g.inBatch, g.bBytes = g.inBatch+1, g.bBytes+len(e)
	if g.bBytes < 1<<20 {
		return nil
	}
	return g.flush()
}

func (g *genWriter) flush() error {
	if g.inBatch == 0 {
		return nil
	}
	g.inBatch, g.bBytes = 0, 0
	return g.l.WriteBatch(&g.b)
}

// push adds the unsealed entry e to the generation's write batch; the last
// one pushed is flagged as the batch's end by endBatch.
func (g *genWriter) push(e []byte) error {
	if g.holding {
		seal(g.held, g.batch, 0)
		if err := g.write(g.held); err != nil {
			return err
		}
	}
	g.held, g.holding = append(g.held[:0], e...), true
	return nil
}

// endBatch writes the last pushed entry as the end of its write batch.
func (g *genWriter) endBatch() error {
	if !g.holding {
		return nil
	}
	g.holding = false
	seal(g.held, g.batch, flagBatchEnd)
	return g.write(g.held)
}

// finish makes the generation durable and live: fsync its segments, write
// its tail hint (which fsyncs its directory), rename gen-{n}.tmp to gen-{n}
// and fsync the WAL directory. Before the rename a failure leaves the live
// generation as it was (the .tmp is removed); a failed fsync after it, not
// undone, is errSwitchUndecided.
func (g *genWriter) finish() (built, error) {
	err := g.flush()
	if err == nil {
		err = g.l.Sync()
	}
	if cerr := g.l.Close(); err == nil {
		err = cerr
	}
	g.l = nil
	var segs []segmentFile
	if err == nil {
		segs, _, err = listSegments(g.tmp)
	}
	if err == nil {
		var info os.FileInfo
		if info, err = os.Stat(segs[len(segs)-1].path); err == nil {
			g.out.tailSize = info.Size()
		}
	}
	if err == nil {
		err = writeHint(g.tmp, segs[len(segs)-1].first) // fsyncs tmp too
	}
	if err == nil {
		err = os.Rename(g.tmp, g.final)
		if err == nil {
			if err = fsutil.SyncDir(g.w.root); err != nil {
				// The switch may or may not be durable: undo it, or
				// report that the live generation is undecided.
				if rerr := os.RemoveAll(g.final); rerr != nil {
					return built{}, fmt.Errorf("%w: %s: %v (then removing it: %v)", errSwitchUndecided, g.final, err, rerr)
				}
				if serr := fsutil.SyncDir(g.w.root); serr != nil {
					return built{}, fmt.Errorf("%w: %s: %v (then removing it: %v)", errSwitchUndecided, g.final, err, serr)
				}
			}
		}
	}
	if err != nil {
		os.RemoveAll(g.tmp)
		return built{}, fmt.Errorf("wal: build generation %s: %w", g.final, err)
	}
	return g.out, nil
}

// abort drops the unfinished generation.
func (g *genWriter) abort() {
	if g.l != nil {
		g.l.Close()
		g.l = nil
	}
	os.RemoveAll(g.tmp)
}

// build writes generation n whole: the checkpoint cp, then the entries fill
// emits, all as write batch batch, and makes it live (see finish).
func (w *WAL) build(n uint64, cp *checkpoint, batch uint64, fill func(emit func(*Entry) error) error) (built, error) {
	g, err := w.newGen(n, batch)
	if err != nil {
		return built{}, err
	}
	if err := g.fill(cp, fill); err != nil {
		g.abort()
		return built{}, fmt.Errorf("wal: build generation %s: %w", g.final, err)
	}
	return g.finish()
}

// fill pushes the checkpoint cp and the entries fill emits and ends the
// batch.
func (g *genWriter) fill(cp *checkpoint, fill func(emit func(*Entry) error) error) error {
	err := g.push(appendCheckpoint(nil, cp))
	if err == nil && fill != nil {
		var enc []byte
		err = fill(func(e *Entry) error {
			enc = appendMessage(enc[:0], e)
			g.out.messages++
			return g.push(enc)
		})
	}
	if err == nil {
		err = g.endBatch()
	}
	return err
}
