package bench

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
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
// The variants alternate within one process, monitorRounds rounds of one
// run each, the first variant of a round taking turns: on this shared
// machine a process's speed steps by a third between runs of the same
// variant (80 ns/msg for 13 runs, then 110: another tenant), so -count,
// which runs all of one variant and then all of the other, compared the
// two halves of the run instead of the variants (+12.7%, then +19.6%,
// both p<0.01). Compare with
//
//	benchstat -col /metrics -ignore /round monitor.txt
func BenchmarkMonitor(b *testing.B) {
	variants := [2]struct {
		name string
		run  func(*testing.B)
	}{
		{"metrics=off", func(b *testing.B) { benchRunnel(b) }},
		{"metrics=on", func(b *testing.B) { benchRunnelWatched(b, "bench", nil, scraped(b)) }},
	}
	for r := range monitorRounds {
		for i := range variants {
			v := variants[(r+i)%2]
			b.Run(fmt.Sprintf("round=%02d/%s", r, v.name), v.run)
		}
	}
}

// monitorRounds is how many runs of each variant BenchmarkMonitor makes.
const monitorRounds = 12

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
