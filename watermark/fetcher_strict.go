package watermark

// Strict mode (FetcherConfig.Processors): an edge's watermark is the
// minimum over a fixed set of processors, live or not, so a pipeline whose
// processes start in any order, and are killed and restarted, never
// computes a watermark on part of an edge's writers.
//
// The fetcher creates the expected processors up front, so an edge's
// processor list is the expected set from the start: Fetch takes the
// minimum over all of them, and one that said nothing below the offset
// read (never heard of, or heard only by its heartbeat) holds the edge.
// Liveness changes nothing but Live: a processor whose heartbeat timed out
// or was deleted keeps its timeline, which holds the edge at its last
// watermark, or, past its end-of-stream message, at Max.

import (
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
)

// validateProcessors checks c.Processors against c.Edges and fills
// cfg.expected.
func (c FetcherConfig) validateProcessors(cfg *fetcherConfig) error {
	if c.Processors == nil {
		return nil
	}
	for bucket := range c.Processors {
		if !slices.Contains(cfg.edges, bucket) {
			return fmt.Errorf("%w: FetcherConfig.Processors: bucket %q is not one of Edges", ErrInvalidConfig, bucket)
		}
	}
	cfg.expected = make([][]string, len(cfg.edges))
	for i, bucket := range cfg.edges {
		names := slices.Clone(c.Processors[bucket])
		if len(names) == 0 {
			return fmt.Errorf("%w: FetcherConfig.Processors: no processor for edge %q", ErrInvalidConfig, bucket)
		}
		slices.Sort(names)
		for j, name := range names {
			if err := validProcessor(name); err != nil {
				return fmt.Errorf("%w: FetcherConfig.Processors[%q]: %w", ErrInvalidConfig, bucket, err)
			}
			if j > 0 && names[j-1] == name {
				return fmt.Errorf("%w: FetcherConfig.Processors[%q]: %q twice", ErrInvalidConfig, bucket, name)
			}
		}
		cfg.expected[i] = names
	}
	return nil
}

// expects reports whether proc counts on edge: when not strict, unless
// Accept refuses it; in strict mode when it is expected. A processor not expected is recorded and
// logged the first time. f.mu must be held.
func (f *Fetcher) expects(edge int, proc string) bool {
	switch {
	case f.cfg.expected == nil && (f.cfg.accept == nil || f.cfg.accept(proc)):
		return true
	case f.cfg.expected != nil:
		if _, ok := slices.BinarySearch(f.cfg.expected[edge], proc); ok {
			return true
		}
	}
	e := f.edges[edge]
	if i, found := slices.BinarySearch(e.ignored, proc); !found {
		e.ignored = slices.Insert(e.ignored, i, proc)
		f.cfg.log.Warn("watermark: ignoring a processor the edge does not expect (another run's, or a replica no longer run)",
			zap.String("bucket", f.cfg.edges[edge]), zap.String("processor", proc),
			zap.Strings("expected", f.expectedOf(edge)))
	}
	return false
}

// edgeAtStrict is edgeAt in strict mode: the minimum over every expected
// processor of e, live or not; ok is false while one has nothing below
// offset. f.mu must be held.
func edgeAtStrict(e *edgeState, pos int, offset int64) (time.Time, bool) {
	var low time.Time
	for i, p := range e.procs {
		wm, ok := p.timelines[pos].lookup(offset)
		if !ok {
			return time.Time{}, false
		}
		if i == 0 || wm.Before(low) {
			low = wm
		}
	}
	return low, len(e.procs) > 0
}

// unheardLocked returns the expected processors of edge not heard of yet,
// sorted. f.mu must be held.
func (f *Fetcher) unheardLocked(edge int) []string {
	var names []string
	for _, p := range f.edges[edge].procs {
		if !p.heard {
			names = append(names, p.name)
		}
	}
	slices.Sort(names)
	return names
}

// Ignored returns the processors of edge that strict mode ignored because
// FetcherConfig.Processors does not name them, sorted (for status and
// tests). Outside strict mode, and for an edge the fetcher does not watch,
// there are none.
func (f *Fetcher) Ignored(edge string) []string {
	i := slices.Index(f.cfg.edges, edge)
	if i < 0 {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.edges[i].ignored)
}

// expectedOf is the expected processors of edge (none when not strict).
func (f *Fetcher) expectedOf(edge int) []string {
	if f.cfg.expected == nil {
		return nil
	}
	return f.cfg.expected[edge]
}
