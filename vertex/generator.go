package vertex

import (
	"context"
	"io"
	"math"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"
)

// genConfig is what the generator's With methods set.
type genConfig struct {
	rate      float64 // messages per second over all replicas, 0 unlimited
	count     int64   // messages in total, 0 unlimited
	keys      int     // distinct keys, 0 none
	eventTime func(i int64) time.Time
}

// maxWait is the longest Duration as a float64 that converts back exactly
// (float64(math.MaxInt64) rounds up to 2^63, which does not fit).
var maxWait = math.Nextafter(math.MaxInt64, 0)

// GeneratorSource is the [Source] returned by [Generator].
type GeneratorSource[T any] struct {
	value func(i int64) T
	cfg   genConfig
	keys  [][]string // keys[i%n], shared by the messages of one key
	next  atomic.Int64
	start atomic.Int64 // unix nanoseconds of the first Read, for the rate
	// base is the first message of this run (Resume's position): the rate
	// counts from it, so a resumed run is not held back for as long as the
	// earlier runs lasted.
	base int64
	// clock is time.Now, or a test's clock.
	clock func() time.Time
	// resume is set by Resume (durable storage), before the first Read.
	resume *genResume
}

// Generator returns a source of the messages value(0), value(1), ... with
// IDs "0", "1", ... It is safe for concurrent use by replicas, which share
// the sequence, the count and the rate. Without configuration it generates
// forever, as fast as it is read, messages without keys whose event time is
// the time they are read; its With methods, chained after Generator, change
// that:
//
//	src := vertex.Generator(newReading).WithCount(1000).WithRate(200).WithKeys(8)
//
// Bad values are reported by Validate, which the pipeline calls before it
// starts.
func Generator[T any](value func(i int64) T) *GeneratorSource[T] {
	return &GeneratorSource[T]{value: value}
}

// WithCount ends the generator (io.EOF) after n messages (default
// unlimited). It returns g, like every With method of the generator, which
// must be called before the pipeline runs.
func (g *GeneratorSource[T]) WithCount(n int64) *GeneratorSource[T] {
	g.cfg.count = n
	return g
}

// WithRate limits the generator to perSecond messages per second over all
// replicas (default unlimited). The interval between two messages,
// 1/perSecond seconds, must fit a [time.Duration] (about 292 years), so
// Validate refuses a rate below about 1.08e-10.
func (g *GeneratorSource[T]) WithRate(perSecond float64) *GeneratorSource[T] {
	g.cfg.rate = perSecond
	return g
}

// WithKeys gives message i the single key "k<i mod n>" (default: no keys).
func (g *GeneratorSource[T]) WithKeys(n int) *GeneratorSource[T] {
	g.cfg.keys = n
	g.keys = nil
	if n > 0 {
		g.keys = make([][]string, n)
		for i := range g.keys {
			g.keys[i] = []string{"k" + strconv.Itoa(i)}
		}
	}
	return g
}

// WithEventTime makes f(i) the event time of message i (default: the time
// it is read).
func (g *GeneratorSource[T]) WithEventTime(f func(i int64) time.Time) *GeneratorSource[T] {
	g.cfg.eventTime = f
	return g
}

// Validate reports the first bad value given to a With method (or a nil
// value function) as an *OptionError naming the method.
func (g *GeneratorSource[T]) Validate() error {
	switch {
	case g.value == nil:
		return optionError("Generator", nil, "needs a value function")
	case g.cfg.rate < 0 || math.IsNaN(g.cfg.rate) || math.IsInf(g.cfg.rate, 0):
		return optionError("WithRate", g.cfg.rate, "must be 0 (unlimited) or a positive finite number")
	case g.cfg.rate > 0 && float64(time.Second)/g.cfg.rate >= math.MaxInt64:
		// reserve converts waits of up to one interval to a Duration; a
		// larger one would overflow int64 into a meaningless wait.
		return optionError("WithRate", g.cfg.rate, "is too small: the interval between two messages (1/rate seconds) must fit a time.Duration, so the rate must be at least about 1.08e-10")
	case g.cfg.count < 0:
		return optionError("WithCount", g.cfg.count, "must be 0 (unlimited) or positive")
	case g.cfg.keys < 0:
		return optionError("WithKeys", g.cfg.keys, "must be 0 (no keys) or positive")
	}
	return nil
}

// Read returns up to maxN messages, waiting as the rate requires, and
// io.EOF once WithCount's n messages were generated.
func (g *GeneratorSource[T]) Read(ctx context.Context, maxN int) ([]Message[T], error) {
	buf := make([]Message[T], maxN)
	n, err := g.ReadInto(ctx, buf)
	return buf[:n:n], err
}

// ReadInto is Read into buf: it fills buf[:n] with up to len(buf) messages.
func (g *GeneratorSource[T]) ReadInto(ctx context.Context, buf []Message[T]) (int, error) {
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		first, n, wait := g.reserve(len(buf))
		if n > 0 {
			g.fill(buf[:n], first)
			return n, nil
		}
		if wait < 0 {
			return 0, io.EOF
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		case <-t.C:
		}
	}
}

// reserve claims up to maxN sequence numbers. It returns n = 0 with the time
// to wait for the rate, or wait < 0 when the count is used up.
func (g *GeneratorSource[T]) reserve(maxN int) (first int64, n int, wait time.Duration) {
	now := time.Now().UnixNano()
	if g.clock != nil {
		now = g.clock().UnixNano()
	}
	g.start.CompareAndSwap(0, now)
	for {
		cur := g.next.Load()
		limit := int64(math.MaxInt64)
		if g.resume != nil {
			// Messages acknowledged in an earlier run are not made again.
			next, stop := g.resume.skipAt(cur)
			if next != cur {
				g.next.CompareAndSwap(cur, next)
				continue
			}
			limit = stop
		}
		if g.cfg.count > 0 {
			if cur >= g.cfg.count {
				return 0, 0, -1
			}
			limit = min(limit, g.cfg.count)
		}
		if g.cfg.rate > 0 {
			// Message i is due at start + (i-base)/rate; one is due at once.
			due := g.base + int64(float64(now-g.start.Load())/1e9*g.cfg.rate) + 1
			if due <= cur {
				// Computed from now rather than as an absolute time: start
				// plus a slow rate's interval would overflow int64. Validate
				// keeps one interval, the longest wait, within a Duration.
				wait := float64(cur-g.base)/g.cfg.rate*1e9 - float64(now-g.start.Load())
				return 0, 0, time.Duration(min(max(wait, float64(time.Microsecond)), maxWait))
			}
			limit = min(limit, due)
		}
		n := min(int64(maxN), limit-cur)
		if g.next.CompareAndSwap(cur, cur+n) {
			return cur, int(n), 0
		}
	}
}

// fill sets out[k] to message first+k, every field (out may be reused).
func (g *GeneratorSource[T]) fill(out []Message[T], first int64) {
	var now time.Time
	if g.cfg.eventTime == nil {
		now = time.Now() // one clock read per batch: the batch is read at once
	}
	ids := batchIDs(first, len(out))
	for k := range out {
		i := first + int64(k)
		m := Message[T]{ID: ids.next(), Value: g.value(i), EventTime: now}
		if g.cfg.eventTime != nil {
			m.EventTime = g.cfg.eventTime(i)
		}
		if g.keys != nil {
			m.Keys = g.keys[i%int64(len(g.keys))]
		}
		out[k] = m
	}
}

// idRun hands out the decimal IDs of a run of consecutive numbers, cut
// from one string: one allocation per batch instead of one per message
// (the memory pipeline's only allocation per message). The string is
// never written again, so the IDs it backs are ordinary strings; each
// keeps the batch's string alive, a few bytes per message of the batch.
type idRun struct {
	s   string
	pos int   // where the next ID starts in s
	n   int64 // the next ID's number
}

// batchIDs returns the IDs of first..first+n-1.
func batchIDs(first int64, n int) idRun {
	if n == 0 {
		return idRun{}
	}
	width := max(decimalWidth(first), decimalWidth(first+int64(n)-1))
	buf := make([]byte, 0, n*width)
	for k := range n {
		buf = strconv.AppendInt(buf, first+int64(k), 10)
	}
	return idRun{s: unsafe.String(unsafe.SliceData(buf), len(buf)), n: first}
}

// next returns the next ID of the run.
func (r *idRun) next() string {
	end := r.pos + decimalWidth(r.n)
	id := r.s[r.pos:end]
	r.pos, r.n = end, r.n+1
	return id
}

// decimalWidth is len(strconv.FormatInt(x, 10)).
func decimalWidth(x int64) int {
	w := 1
	if x < 0 {
		if x == math.MinInt64 {
			return 20
		}
		w, x = 2, -x
	}
	for ; x >= 10; x /= 10 {
		w++
	}
	return w
}
