package pipeline

import (
	"sync"
	"time"
)

// Rates are a count's average rate per second over the last 1, 5 and 15
// minutes (over the time since the run started while it is younger),
// as Numaflow's UI shows processing rates.
type Rates struct {
	M1  float64 `json:"1m"`
	M5  float64 `json:"5m"`
	M15 float64 `json:"15m"`
}

// rateEvery is how often a running pipeline samples its counts for Rates:
// a rate moves within a second of the counts, and 15 minutes of samples
// are 901 per count.
const rateEvery = time.Second

// rateWindows are the windows of Rates, in field order.
var rateWindows = [...]time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute}

// rateSample is the counts of every series at one time.
type rateSample struct {
	at     time.Time
	counts []int64
}

// rateRing keeps the samples of the last 15 minutes (and one before, the
// base of the 15-minute rate), oldest first, in a ring. It is not safe for
// concurrent use: the pipeline guards it with its mutex.
type rateRing struct {
	samples []rateSample // capacity ringSize
	first   int          // index of the oldest sample
}

// ringSize holds 15 minutes of samples at rateEvery, and the base before them.
const ringSize = int(15*time.Minute/rateEvery) + 2

// add records counts at time at. The ring keeps counts; the caller must
// not change them afterwards.
func (r *rateRing) add(at time.Time, counts []int64) {
	s := rateSample{at: at, counts: counts}
	if len(r.samples) < ringSize {
		r.samples = append(r.samples, s)
		return
	}
	r.samples[r.first] = s
	r.first = (r.first + 1) % ringSize
}

// at returns the i-th sample, oldest first.
func (r *rateRing) at(i int) rateSample { return r.samples[(r.first+i)%len(r.samples)] }

// rates returns the rates of series i whose count is now cur: per window,
// the increase since the newest sample at least the window old (the
// oldest sample while the ring holds none that old), divided by the time
// since that sample. Zero without a sample at least a millisecond old.
func (r *rateRing) rates(i int, now time.Time, cur int64) Rates {
	var out [len(rateWindows)]float64
	if len(r.samples) == 0 {
		return Rates{}
	}
	for w, window := range rateWindows {
		base := r.at(0)
		for k := len(r.samples) - 1; k > 0; k-- {
			if s := r.at(k); !s.at.After(now.Add(-window)) {
				base = s
				break
			}
		}
		if d := now.Sub(base.at); d >= time.Millisecond && i < len(base.counts) {
			out[w] = float64(cur-base.counts[i]) / d.Seconds()
		}
	}
	return Rates{M1: out[0], M5: out[1], M15: out[2]}
}

// sampleRates samples the counts of the rates (every vertex's reads, then
// every edge's writes) now and every rateEvery until the returned function
// is called, which waits for the sampling goroutine to end.
func (p *Pipeline) sampleRates() (stop func()) {
	p.sampleOnce(time.Now())
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(rateEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				p.sampleOnce(now)
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		p.sampleOnce(time.Now()) // the final counts: rates decay from them
	}
}

// sampleOnce adds the counts of now to the ring.
func (p *Pipeline) sampleOnce(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	counts := make([]int64, 0, len(p.nodes)+len(p.nodes))
	for _, n := range p.nodes {
		var read int64
		for _, c := range n.counters {
			read += c.Snapshot().Read
		}
		counts = append(counts, read)
	}
	p.rates.add(now, p.edgeCounts(counts))
}
