package forwarder

import (
	"context"
	"time"
)

// Ends known outside the buffer (Input.Ended): a reader restarted after it
// committed past an upstream's end of stream does not read that end again,
// so it learns of it from the watermark store's final WMBs instead.
//
// The upstream writes its end to the buffer first and publishes its final
// WMB after, so a reader can read the end, commit past it, be killed and
// start again before the final WMB is stored. Looking once at the start
// would then miss the end for good: the reader's Pull would wait for data
// that never comes. So the reader looks at the start (seedEnds) and again
// every idle interval until every upstream of every partition has ended
// (endsLoop), and a found end wakes a waiting Pull.

// endsState is the reader's side of that: where each partition started, and
// the ends the loop found for the reader goroutine to record.
type endsState struct {
	starts map[int]int64               // each partition's committed offset at the start
	known  map[int]map[string]struct{} // ends recorded or handed over, per partition (loop's)
	watch  bool                        // endsLoop must run: some partition has not ended

	// mu (the reader's) guards found and the Pull's wake.
	found    []foundEnd
	pull     context.Context    // the context of the reader's Pulls
	wakePull context.CancelFunc // cancels pull: a found end wakes a waiting Pull
}

// foundEnd is one end endsLoop found: processor's stream on partition is
// over.
type foundEnd struct {
	partition int
	processor string
}

// seedEnds records, before the first read, the ends ended knows of that lie
// below where the consumer starts: the reader read and committed them
// before it was restarted. Ends at or above it it reads again. It notes
// whether endsLoop must look again.
func (r *reader[T]) seedEnds(ended func(partition int) map[string]int64) {
	if r.ends == nil || ended == nil {
		return
	}
	r.endsState.starts = map[int]int64{}
	r.endsState.known = map[int]map[string]struct{}{}
	for _, p := range r.c.Assigned() {
		start, err := r.c.Committed(p)
		if err != nil {
			continue // it reads what it finds
		}
		r.endsState.starts[p] = start
		r.endsState.known[p] = map[string]struct{}{}
		for _, proc := range r.endsState.learn(p, ended) {
			r.observeEnd(p, proc, Final)
		}
	}
	r.endsState.watch = !r.ended() && len(r.endsState.starts) > 0
}

// endsLoop asks ended every interval for the ends below where each
// partition started that seedEnds did not know of, and hands them to the
// reader goroutine, waking its Pull. It returns once every partition has
// as many ends as it has writers, or ctx ends.
func (r *reader[T]) endsLoop(ctx context.Context, ended func(partition int) map[string]int64, every time.Duration) {
	if !r.endsState.watch {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var found []foundEnd
		complete := true
		for p := range r.endsState.starts {
			known := r.endsState.known[p]
			if len(known) >= r.ends.writers {
				continue
			}
			for _, proc := range r.endsState.learn(p, ended) {
				found = append(found, foundEnd{partition: p, processor: proc})
			}
			complete = complete && len(known) >= r.ends.writers
		}
		if len(found) > 0 {
			r.mu.Lock()
			r.endsState.found = append(r.endsState.found, found...)
			if r.endsState.wakePull != nil {
				r.endsState.wakePull()
			}
			r.mu.Unlock()
		}
		if complete {
			return
		}
	}
}

// learn returns the processors ended reports ended on partition p below
// where p started that known does not hold yet, and adds them to it.
func (s *endsState) learn(p int, ended func(partition int) map[string]int64) []string {
	var out []string
	for proc, off := range ended(p) {
		if _, ok := s.known[p][proc]; !ok && off < s.starts[p] {
			s.known[p][proc] = struct{}{}
			out = append(out, proc)
		}
	}
	return out
}

// pullContext is the context of the reader's next Pull, derived from ctx:
// one endsLoop can cancel to wake the Pull, when it runs. It reports false
// when ends were found since the last recordFound: the reader records them
// before it waits.
func (r *reader[T]) pullContext(ctx context.Context) (context.Context, bool) {
	if !r.endsState.watch {
		return ctx, true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.endsState.found) > 0 {
		return nil, false
	}
	if r.endsState.pull == nil || r.endsState.pull.Err() != nil {
		r.endsState.pull, r.endsState.wakePull = context.WithCancel(ctx)
	}
	return r.endsState.pull, true
}

// recordFound records the ends endsLoop found, on the reader goroutine,
// which owns the reader's InputEnds.
func (r *reader[T]) recordFound() {
	if !r.endsState.watch {
		return
	}
	r.mu.Lock()
	found := r.endsState.found
	r.endsState.found = nil
	r.mu.Unlock()
	for _, e := range found {
		r.observeEnd(e.partition, e.processor, Final)
	}
}
