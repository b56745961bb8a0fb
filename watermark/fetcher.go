package watermark

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Fetcher defaults.
const (
	DefaultTimelineLength   = 4096
	DefaultHeartbeatTimeout = 10 * time.Second
)

// maxPartition bounds the partition numbers a fetcher reads: it indexes
// them with a slice as long as the highest one.
const maxPartition = 1<<16 - 1

// FetcherConfig configures a [Fetcher]. Zero fields take the defaults.
type FetcherConfig struct {
	// Edges are the buckets of the incoming edges (several for a join).
	Edges []string
	// Partitions are the partitions of the input buffer this reader reads.
	Partitions []int
	// TimelineLength bounds the WMBs kept per upstream processor and
	// partition (DefaultTimelineLength). A timeline drops what its reader
	// has read past, so it holds about as many entries as the reader lags
	// writes behind; the bound matters only for a reader that lags more, or
	// stops reading: its oldest entries then fall out, and a message read
	// below all of them gets no watermark of its own (the vertex watermark
	// holds).
	TimelineLength int
	// HeartbeatTimeout: a processor not heard from for longer is dropped
	// (DefaultHeartbeatTimeout) when the next change reaches the fetcher,
	// that is within one heartbeat interval while any upstream processor
	// lives. Keep it several heartbeat intervals. In strict mode
	// (Processors) it only takes the processor out of Live: it still
	// counts.
	HeartbeatTimeout time.Duration
	// Clock is the fetcher's clock (time.Now when nil). Liveness is judged
	// on this clock at the moment a heartbeat arrives, so clocks of other
	// machines do not matter.
	Clock Clock
	// Logger reports undecodable WMBs; nil logs nothing.
	Logger *zap.Logger
	// OnFailure is called once, on the fetcher's goroutine, when the
	// watch of an edge's bucket fails: the store yielded an error, which
	// by the Store contract means the watch cannot go on (a store heals
	// what heals, a reconnect or a server restart, inside Watch). The
	// error, which Err also returns, names the bucket. The fetcher's
	// watermark holds from then on, so a pipeline fails its run with it
	// rather than going on with watermarks that never move. It must not
	// block or call Stop.
	OnFailure func(error)
	// Accept, when not nil and not in strict mode, is asked about every
	// processor the store holds: one it refuses is ignored (and logged
	// once). A pipeline accepts only the processors of its own run, so a
	// store that outlives runs, or that two processes running the same
	// pipeline on storage each owns share, never mixes their watermarks.
	Accept func(processor string) bool
	// Processors, when not nil, turns on strict mode (see
	// fetcher_strict.go): per edge bucket of Edges, the names
	// ([ProcessorName]) of every processor that writes to that edge, that
	// is of every replica of its upstream vertex. Each edge needs an entry
	// of at least one name, and the map no other key.
	//
	// Without it an edge's watermark is the minimum over the processors
	// the fetcher knows and that live: right in one process, where every
	// upstream replica heartbeats before its readers start and stops with
	// them; wrong when processes start in any order and are killed and
	// restarted, because the watermark then runs ahead on the replicas
	// that happen to be up, and the data a missing one writes later is
	// late. In strict mode an edge's watermark is the minimum over every
	// expected processor, live or not:
	//   - it has none (holds) until each has published a WMB below the
	//     offset read: one never heard of holds it;
	//   - a processor whose heartbeat times out (it was killed) or is
	//     deleted (it stopped), keeps its timeline and holds the
	//     watermark at what that says until it heartbeats and publishes
	//     again. A processor that ended a partition published [Max] there
	//     at its end-of-stream message (PublishEnd), so it holds only the
	//     messages before its end, which it wrote, and never after;
	//   - processors not named are ignored (another run's, or of a replica
	//     count since lowered), and logged once per edge and name
	//     (Ignored lists them).
	//
	// Names, not a count: a count cannot tell which processors it heard,
	// so a stale processor would stand in for a missing replica and the
	// watermark would run ahead on it; names make "every writer of the
	// edge" exact, and a restarted replica, under its own name, takes back
	// its timeline.
	Processors map[string][]string
}

type fetcherConfig struct {
	edges       []string
	partitions  []int // sorted, unique
	index       []int // partition -> position in partitions, -1 when not read
	timelineLen int
	timeout     time.Duration
	clock       Clock
	log         *zap.Logger
	onFailure   func(error)
	// expected[i] are the processors of edges[i] in strict mode, sorted;
	// nil when not strict.
	expected [][]string
	accept   func(string) bool // FetcherConfig.Accept
}

func (c FetcherConfig) validate() (fetcherConfig, error) {
	cfg := fetcherConfig{
		edges:       slices.Clone(c.Edges),
		timelineLen: cmp.Or(c.TimelineLength, DefaultTimelineLength),
		timeout:     cmp.Or(c.HeartbeatTimeout, DefaultHeartbeatTimeout),
		clock:       c.Clock.orNow(),
		log:         c.Logger,
		onFailure:   c.OnFailure,
		accept:      c.Accept,
	}
	if cfg.log == nil {
		cfg.log = zap.NewNop()
	}
	if len(cfg.edges) == 0 {
		return cfg, fmt.Errorf("%w: FetcherConfig.Edges is empty", ErrInvalidConfig)
	}
	for i, e := range cfg.edges {
		if err := validBucket(e); err != nil {
			return cfg, fmt.Errorf("%w: FetcherConfig.Edges[%d]: %w", ErrInvalidConfig, i, err)
		}
		if slices.Contains(cfg.edges[:i], e) {
			return cfg, fmt.Errorf("%w: FetcherConfig.Edges: %q twice", ErrInvalidConfig, e)
		}
	}
	if len(c.Partitions) == 0 {
		return cfg, fmt.Errorf("%w: FetcherConfig.Partitions is empty", ErrInvalidConfig)
	}
	cfg.partitions = slices.Clone(c.Partitions)
	slices.Sort(cfg.partitions)
	for i, p := range cfg.partitions {
		if p < 0 {
			return cfg, fmt.Errorf("%w: FetcherConfig.Partitions: negative partition %d", ErrInvalidConfig, p)
		}
		if p > maxPartition {
			return cfg, fmt.Errorf("%w: FetcherConfig.Partitions: partition %d above %d", ErrInvalidConfig, p, maxPartition)
		}
		if i > 0 && cfg.partitions[i-1] == p {
			return cfg, fmt.Errorf("%w: FetcherConfig.Partitions: partition %d twice", ErrInvalidConfig, p)
		}
	}
	cfg.index = slices.Repeat([]int{-1}, cfg.partitions[len(cfg.partitions)-1]+1)
	for i, p := range cfg.partitions {
		cfg.index[p] = i
	}
	if cfg.timelineLen < 1 {
		return cfg, fmt.Errorf("%w: FetcherConfig.TimelineLength %d < 1", ErrInvalidConfig, c.TimelineLength)
	}
	if cfg.timeout <= 0 {
		return cfg, fmt.Errorf("%w: FetcherConfig.HeartbeatTimeout %v <= 0", ErrInvalidConfig, c.HeartbeatTimeout)
	}
	if err := c.validateProcessors(&cfg); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// Fetcher computes the watermark of the messages one reader reads. Build it
// with NewFetcher, Start it, call Fetch for every message read (and
// FetchIdle after an empty read), and Stop it. It is safe for concurrent use.
type Fetcher struct {
	store Store
	cfg   fetcherConfig

	mu      sync.Mutex
	edges   []*edgeState  // guarded by mu; one per cfg.edges
	vertex  time.Time     // guarded by mu; the vertex watermark, never decreasing
	changed chan struct{} // guarded by mu; closed and replaced after each applied change

	failOnce sync.Once
	failed   chan struct{} // closed when a watch failed; err is set before
	err      error

	life lifecycle
}

// edgeState is what a fetcher knows about one incoming edge.
type edgeState struct {
	// procs are the known processors; a slice, not a map, because Fetch
	// ranges over them for every message and a map range costs more than
	// the lookups themselves. Order is irrelevant (removal swaps).
	procs []*procState
	// last[i] is the edge's watermark of partition cfg.partitions[i]: the
	// highest minimum over its live processors seen so far. It never
	// decreases, and it holds while the edge has no live processor, so a
	// whole dead upstream vertex stalls the vertex rather than letting the
	// watermark run past data it already wrote.
	last []time.Time
	// ignored are the processors strict mode ignored (not expected), each
	// logged once.
	ignored []string
}

// procState is one upstream processor.
type procState struct {
	name  string
	beat  time.Time // fetcher clock at its last heartbeat; zero: none yet
	since time.Time // fetcher clock when it was first seen
	// dead: its heartbeats stopped for the timeout. It counts for nothing,
	// but keeps its timelines: if it heartbeats again (it was only slow),
	// its WMBs still hold, instead of an empty timeline holding every
	// watermark until it publishes a new one (a publisher publishes only
	// changes, so that could be never).
	dead bool
	// heard: a heartbeat or a WMB of it arrived (strict mode creates the
	// expected processors before).
	heard     bool
	timelines []timeline // per position in cfg.partitions
}

// NewFetcher validates cfg and returns a fetcher reading store.
func NewFetcher(store Store, cfg FetcherConfig) (*Fetcher, error) {
	c, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	if store == nil {
		return nil, fmt.Errorf("%w: NewFetcher: nil Store", ErrInvalidConfig)
	}
	f := &Fetcher{store: store, cfg: c, changed: make(chan struct{}), failed: make(chan struct{})}
	for i := range c.edges {
		e := &edgeState{last: make([]time.Time, len(c.partitions))}
		f.edges = append(f.edges, e)
		if c.expected != nil {
			for _, name := range c.expected[i] {
				f.proc(e, name, time.Time{})
			}
		}
	}
	return f, nil
}

// Fetch returns the vertex watermark to attach to the message at offset of
// partition: the partition's watermark (per edge, the minimum over live
// upstream processors of the newest timeline watermark below offset) is
// raised if it moved, and the result is the minimum over edges and read
// partitions, never lower than anything Fetch returned before. A partition
// this reader does not read changes nothing. The zero Time means no
// watermark yet.
//
// A reader's fetches of one partition go forward, as it reads: each drops
// the WMBs before the one it was answered with, which no later fetch needs,
// so a reader far behind its upstream still finds the WMB below each
// message. A fetch below an earlier one may therefore find nothing new (the
// vertex watermark holds, which is always safe).
func (f *Fetcher) Fetch(partition int, offset int64) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if partition < 0 || partition >= len(f.cfg.index) || f.cfg.index[partition] < 0 {
		return f.vertex
	}
	i := f.cfg.index[partition]
	raised := false
	for _, e := range f.edges {
		if wm, ok := f.edgeAt(e, i, offset); ok && wm.After(e.last[i]) {
			e.last[i], raised = wm, true
		}
	}
	if raised { // only a raised partition watermark can raise the minimum
		f.raiseVertex()
	}
	return f.vertex
}

// FetchIdle is Fetch for a read of partition that returned nothing: next
// is the next offset the reader will read, so every WMB below it (the idle
// WMBs of a quiet partition in particular) may advance the watermark. It
// returns the vertex watermark.
func (f *Fetcher) FetchIdle(partition int, next int64) time.Time { return f.Fetch(partition, next) }

// edgeAt is the minimum over e's live processors (heard from and not swept)
// of their timeline watermark below offset at partition position pos; ok is
// false when e has no live processor or one of them has nothing below
// offset. f.mu must be held.
func (f *Fetcher) edgeAt(e *edgeState, pos int, offset int64) (time.Time, bool) {
	if f.cfg.expected != nil {
		return edgeAtStrict(e, pos, offset)
	}
	var low time.Time
	first := true
	for _, p := range e.procs {
		if p.beat.IsZero() || p.dead {
			continue
		}
		wm, ok := p.timelines[pos].lookup(offset)
		if !ok {
			return time.Time{}, false
		}
		if first || wm.Before(low) {
			low, first = wm, false
		}
	}
	return low, !first
}

// EndPartition records that partition has ended: every upstream processor
// of every edge wrote its end-of-stream message there, so nothing more comes
// and the partition's watermark is [Max] on every edge. It returns the
// vertex watermark, which is Max once every partition the reader reads has
// ended. The reader learns of the end from the messages it reads, not from
// the store, so this does not wait for the processors' final WMBs to arrive.
// A partition this reader does not read changes nothing.
func (f *Fetcher) EndPartition(partition int) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if partition < 0 || partition >= len(f.cfg.index) || f.cfg.index[partition] < 0 {
		return f.vertex
	}
	i := f.cfg.index[partition]
	for _, e := range f.edges {
		e.last[i] = Max
	}
	f.raiseVertex()
	return f.vertex
}

// raiseVertex raises the vertex watermark to the minimum over edges and
// partitions. f.mu must be held.
func (f *Fetcher) raiseVertex() {
	low := f.edges[0].last[0]
	for _, e := range f.edges {
		for _, wm := range e.last {
			if wm.Before(low) {
				low = wm
			}
		}
	}
	if low.After(f.vertex) {
		f.vertex = low
	}
}

// Watermark returns the vertex watermark: the highest value Fetch (or
// EndPartition) returned.
func (f *Fetcher) Watermark() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.vertex
}

// Live returns the names of edge's live processors, sorted (for status and
// tests). An edge the fetcher does not watch has none.
func (f *Fetcher) Live(edge string) []string {
	i := slices.Index(f.cfg.edges, edge)
	if i < 0 {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.liveLocked(i, f.cfg.clock())
}

func (f *Fetcher) liveLocked(edge int, now time.Time) []string {
	var names []string
	for _, p := range f.edges[edge].procs {
		if !p.beat.IsZero() && !p.dead && now.Sub(p.beat) <= f.cfg.timeout {
			names = append(names, p.name)
		}
	}
	slices.Sort(names)
	return names
}

// WaitForProcessors blocks until every edge has at least n live processors
// (the upstream replicas), so a reader does not start before its upstream
// publishes. It returns ctx's error, naming the edges still short, if ctx
// ends first.
//
// In strict mode (FetcherConfig.Processors) it ignores n and waits until
// every expected processor of every edge has been heard of (a heartbeat or
// a WMB, from now or from before it died), the error naming those not. It
// is not needed there: the watermark holds without them anyway.
func (f *Fetcher) WaitForProcessors(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		now := f.cfg.clock()
		var short []string
		for i, e := range f.cfg.edges {
			if f.cfg.expected != nil {
				if unheard := f.unheardLocked(i); len(unheard) > 0 {
					short = append(short, fmt.Sprintf("%s (not heard: %s)", e, strings.Join(unheard, " ")))
				}
				continue
			}
			if got := len(f.liveLocked(i, now)); got < n {
				short = append(short, fmt.Sprintf("%s (%d of %d)", e, got, n))
			}
		}
		changed := f.changed
		f.mu.Unlock()
		if len(short) == 0 {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("watermark: waiting for upstream processors of %s: %w",
				strings.Join(short, ", "), ctx.Err())
		}
	}
}
