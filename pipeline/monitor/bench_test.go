package monitor_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/pipeline/monitor"
	"github.com/runnel-dev/runnel/vertex"
)

// BenchmarkScrape is what one scrape of /metrics, and one read of
// /status, cost the process: the CPU a monitored pipeline gives up per
// scrape (the pipeline of BenchmarkMonitor in bench/, after a run, so
// that every series exists).
func BenchmarkScrape(b *testing.B) {
	p := pipeline.New("bench")
	gen := pipeline.Source(p, "gen", vertex.Generator(func(i int64) int64 { return i }).WithCount(1000))
	mapped := pipeline.Map(p, "identity", gen, func(_ context.Context, v int64) (int64, error) { return v, nil })
	pipeline.Sink(p, "sink", mapped, vertex.Blackhole[int64]())
	if err := p.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	h, err := monitor.Handler(p)
	if err != nil {
		b.Fatal(err)
	}
	for _, path := range []string{"/metrics", "/status"} {
		b.Run(path[1:], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}
