package monitor_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/pipeline/monitor"
)

// serve starts an HTTP server of p's handler for the test.
func serve(t *testing.T, p *pipeline.Pipeline, opts ...monitor.Option) *httptest.Server {
	t.Helper()
	h, err := monitor.Handler(p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// get returns the body of GET url, which must answer 200.
func get(t *testing.T, url string) (body []byte, contentType string) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, res.Status, b)
	}
	return b, res.Header.Get("Content-Type")
}

// scrape parses the text exposition of url.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// sample finds the metric of fam whose labels include want, and returns
// its value (a histogram's sample count); ok is false when none matches.
func sample(fams map[string]*dto.MetricFamily, fam string, want map[string]string) (v float64, ok bool) {
	f := fams[fam]
	if f == nil {
		return 0, false
	}
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// waitFor polls cond, bounded, until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// runAsync runs p until the test ends it; the returned function waits for
// Run's result.
func runAsync(t *testing.T, p *pipeline.Pipeline) (wait func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	return func() error {
		select {
		case err := <-done:
			return err
		case <-time.After(60 * time.Second):
			t.Fatal("the pipeline did not end")
			return nil
		}
	}
}
