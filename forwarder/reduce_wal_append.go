package forwarder

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/runnel-dev/runnel/wal"
	"github.com/runnel-dev/runnel/watermark"
)

// Writing the reduce WAL: a shard's entries handed to the log of their
// partition, their durability before results, and the GC events of closed
// windows (see ReduceLog).

// logEntry adds the entry of m, just added to the shard's windows, to the
// shard's pending appends. sh.mu is held.
func (sh *reduceShard[In, S, Out]) logEntry(it *inflight[In]) error {
	log := sh.red.spec.Log
	from := len(sh.vals)
	var err error
	if sh.vals, err = log.Codec.Append(sh.vals, it.msg.Value); err != nil {
		return fmt.Errorf("reduce WAL: message %q: value with codec %s: %w", it.msg.ID, log.Codec.Name(), err)
	}
	wins := len(sh.wins)
	sh.wins = sh.set.added(sh.wins)
	sh.entries = append(sh.entries, wal.Entry{Partition: int32(it.partition), Offset: it.offset,
		EventTime: it.msg.EventTime, ID: it.msg.ID, Keys: it.msg.Keys})
	sh.spans = append(sh.spans, [4]int{from, len(sh.vals), wins, len(sh.wins)})
	return nil
}

// appendLogged hands the shard's pending entries to the logs of their
// partitions and returns the Pending of the last append (nil when there
// were none). A chunk comes from one read batch, so its entries are of one
// partition and go to one log; should they be of several, the appends
// before the last are waited for here, so that the one returned still
// settles the whole chunk. sh.mu is held.
func (sh *reduceShard[In, S, Out]) appendLogged(ctx context.Context) (*wal.Pending, error) {
	if len(sh.entries) == 0 {
		return nil, nil
	}
	// The scratch buffers may have grown while entries were added: the
	// slices are cut only now.
	for i, sp := range sh.spans {
		sh.entries[i].Value = sh.vals[sp[0]:sp[1]:sp[1]]
		sh.entries[i].Windows = sh.wins[sp[2]:sp[3]:sp[3]]
	}
	var last *wal.Pending
	err := sh.appendRuns(ctx, func(p *wal.Pending) error {
		if last != nil {
			if err := last.Wait(ctx); err != nil {
				return err
			}
		}
		last = p
		return nil
	})
	clear(sh.entries)
	sh.entries, sh.spans, sh.vals = sh.entries[:0], sh.spans[:0], sh.vals[:0]
	clear(sh.wins)
	sh.wins = sh.wins[:0]
	if err != nil {
		return nil, fmt.Errorf("reduce WAL append: %w", err)
	}
	return last, nil
}

// appendRuns appends each run of entries of one partition to its log
// (which encodes them: the buffers are free after) and calls handed with
// each append's Pending.
func (sh *reduceShard[In, S, Out]) appendRuns(ctx context.Context, handed func(*wal.Pending) error) error {
	ls := sh.red.logs
	for from := 0; from < len(sh.entries); {
		part := sh.entries[from].Partition
		to := from + 1
		for to < len(sh.entries) && sh.entries[to].Partition == part {
			to++
		}
		pl, err := ls.of(int(part))
		if err != nil {
			return err
		}
		p, err := pl.w.AppendAsync(ctx, sh.entries[from:to]...)
		if err != nil {
			return err
		}
		pl.pending = p
		if err := handed(p); err != nil {
			return err
		}
		from = to
	}
	return nil
}

// loggedChunk is the pending write of a chunk whose entries were handed to
// the log: it completes once they are durable.
type loggedChunk struct {
	ctx context.Context // the handler's: the replica's hard context
	p   *wal.Pending
}

func (c loggedChunk) complete() error {
	if err := c.p.Wait(c.ctx); err != nil {
		return fmt.Errorf("reduce WAL append: %w", err)
	}
	return nil
}

// closeOutOnStop is a Stopped end with a log: without EmitOnStop the log
// keeps the open windows for the next run; with it every open window is
// emitted as it is, as on memory storage. Their GC events then record the
// shard's watermark, not the maximum one that closes them: the next run
// (with another windowing, say) must not take its data for late.
func (red *reduceReplica[In, S, Out]) closeOutOnStop(ctx context.Context) error {
	if !red.spec.Log.EmitOnStop {
		return nil
	}
	ls := red.logs
	for _, sh := range red.shards {
		sh.mu.Lock()
		ls.closingOut, ls.closeOutAt = true, sh.wm
		err := sh.closeUpTo(ctx, watermark.Max.UnixNano())
		ls.closingOut = false
		sh.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// logDurable waits until every entry the shard appended is durable: a
// log writes one goroutine's appends in order, so the last one of each log
// suffices. sh.mu is held.
func (sh *reduceShard[In, S, Out]) logDurable(ctx context.Context) error {
	if sh.red.logs == nil {
		return nil // no log
	}
	for _, pl := range sh.red.logs.parts {
		if pl.pending == nil {
			continue
		}
		if err := pl.pending.Wait(ctx); err != nil {
			return fmt.Errorf("reduce WAL append, partition %d: %w", pl.partition, err)
		}
		pl.pending = nil
	}
	return nil
}

// logClosed appends the GC event of the windows closed at wm, whose
// results are written, to every log of the replica (see ReduceLog), and
// waits for all of them together. The event's watermark is at most the
// latest end (plus lateness) of those windows, so that it stays in the
// log's time range at the maximum watermark of an end of stream; every
// window closed at it is emitted or, in another shard, about to be. sh.mu
// is held.
func (sh *reduceShard[In, S, Out]) logClosed(ctx context.Context, wm int64) error {
	if len(sh.gcs) == 0 {
		return nil
	}
	latest := int64(math.MinInt64)
	for _, w := range sh.gcs {
		latest = max(latest, w.End.UnixNano())
	}
	ls := sh.red.logs
	at := time.Unix(0, min(wm, latest+sh.red.lateness))
	if ls.closingOut {
		at = time.Time{} // no watermark yet
		if ls.closeOutAt != math.MinInt64 {
			at = time.Unix(0, min(ls.closeOutAt, at.UnixNano()))
		}
	}
	ls.pends = ls.pends[:0]
	var err error
	for _, pl := range ls.parts {
		p, gerr := pl.w.GCAsync(ctx, at, sh.gcs...)
		if gerr != nil {
			err = fmt.Errorf("reduce WAL GC, partition %d: %w", pl.partition, gerr)
			break
		}
		ls.pends = append(ls.pends, p)
	}
	for i, p := range ls.pends {
		if werr := p.Wait(ctx); werr != nil && err == nil {
			err = fmt.Errorf("reduce WAL GC, partition %d: %w", ls.parts[i].partition, werr)
		}
	}
	clear(ls.pends)
	clear(sh.gcs)
	sh.gcs = sh.gcs[:0]
	return err
}
