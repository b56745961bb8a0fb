package mmap

// Group flushes.
//
// Under Immediate every Append must return only once its records are on
// disk, and a flush (fdatasync of the segment) is a round trip to the disk that
// costs about as much for one record as for a thousand. A pipeline writes
// to a buffer from several goroutines at once (a map vertex writes each of
// its Concurrency chunks on its own), so an Append does not flush alone:
//
//	appender   appendMu: copy records into the mapping, move written
//	           flushMu:  published already past my records? return
//	                     else flush up to written (mine and every record
//	                     copied before I got flushMu), publish it
//
// Appenders that copy their records while a flush is running queue on
// flushMu; the first to get it flushes everything written so far, the
// others find their records published and return without a flush: one
// flush per wave of concurrent appenders instead of one per Append, as a
// WAL's group commit shares an fsync. No appender waits for a timer or for
// more appenders to arrive, so a lone appender pays exactly what it paid
// before. The records are published (Tail moves) only after the flush that
// covers them succeeded: readers never see a record that a crash of the
// machine could still take back, and an Append that fails leaves its
// records invisible. A failed flush is sticky (failLocked): every appender
// of the wave, and every later one, gets the error.
//
// Append and its Write's Complete (isb.Caps.Deferred) are the two halves
// of a durable append, for a producer that appends alone: it writes its
// next batch while the flush of the last one runs, and one flush then
// publishes every batch written before it.

// publishDurable returns once the records below end are flushed as the
// flush policy requires and published. It is called after the records were
// written, without appendMu.
func (p *partition[T]) publishDurable(end int64) error {
	p.flushMu.Lock()
	defer p.flushMu.Unlock()
	if p.failed != nil {
		return p.failed
	}
	if p.pub.Load().tail >= end {
		return nil // an earlier appender's flush covered these records
	}
	w := p.written.Load()
	pol := p.b.cfg.flush
	if pol.kind == flushImmediate || w.tail-p.durable.tail >= int64(pol.every) {
		if err := p.flushToLocked(w); err != nil {
			return err
		}
	}
	p.pub.Store(w)
	p.tail.Store(w.tail)
	return nil
}

// Seal waits for the appends in flight, including their flushes, and makes
// every later Append and AppendOne fail with isb.ErrClosed. The topic
// calls it before Backend.Close; a second call does nothing.
func (p *partition[T]) Seal() {
	p.closeMu.Lock()
	p.sealed = true
	p.closeMu.Unlock()
}
