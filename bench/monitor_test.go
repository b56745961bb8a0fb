package bench

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/pipeline/monitor"
)

// scrapeEvery is how often the metrics-on variant scrapes /metrics and
// reads /status while the pipeline runs: 150 times Prometheus's default
// scrape interval of 15 s, and 2 times the page's refresh.
const scrapeEvery = 100 * time.Millisecond

// BenchmarkMonitor runs BenchmarkPipeline's generator -> map -> sink with
// and without the pipeline's metrics: "metrics=off" is the
// pipeline as is; "metrics=on" registers its collector on a
// registry and, while it runs, scrapes /metrics and reads /status of the
// monitor handler every scrapeEvery (what the counters cost is paid by
// both: the forwarders keep them either way).
//
// Each call (one per -count) swaps which variant runs first: in one
// process the variant that ran second measured 12.7% slower whichever it
// was (the heap and goroutines an earlier pipeline left), so a fixed order
// reported that as the metrics' cost. Alternating spreads it over both.
func BenchmarkMonitor(b *testing.B) {
	variants := []struct {
		name string
		run  func(*testing.B)
	}{
		{"metrics=off", func(b *testing.B) { benchRunnel(b) }},
		{"metrics=on", func(b *testing.B) { benchRunnelWatched(b, "bench", nil, scraped(b)) }},
	}
	if monitorRounds.Add(1)%2 == 0 {
		variants[0], variants[1] = variants[1], variants[0]
	}
	for _, v := range variants {
		b.Run(v.name, v.run)
	}
}

// monitorRounds counts BenchmarkMonitor's calls, for its order.
var monitorRounds atomic.Int64

// scraped registers p's collector and scrapes it until the returned
// function is called.
func scraped(b *testing.B) func(*pipeline.Pipeline) func() {
	return func(p *pipeline.Pipeline) func() {
		reg := prometheus.NewRegistry()
		if err := monitor.Register(reg, p); err != nil {
			b.Fatal(err)
		}
		h, err := monitor.Handler(p, monitor.Gatherer(reg))
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			t := time.NewTicker(scrapeEvery)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
				}
				for _, path := range []string{"/metrics", "/status"} {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
					if rec.Code != http.StatusOK {
						b.Errorf("GET %s: %d", path, rec.Code)
					}
				}
			}
		})
		return func() { close(done); wg.Wait() }
	}
}
