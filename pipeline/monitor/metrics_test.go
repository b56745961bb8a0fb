package monitor_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/pipeline/monitor"
	"github.com/runnel-dev/runnel/vertex"
)

// split tags odd numbers "odd", drops multiples of 10 by their tag and
// sends the rest nowhere (no edge takes "even").
func split(_ context.Context, m vertex.Message[int]) ([]vertex.Message[int], error) {
	out := vertex.Derive(m, m.Value)
	switch {
	case m.Value%10 == 0:
		out.Tags = []string{vertex.DropTag}
	case m.Value%2 == 1:
		out.Tags = []string{"odd"}
	default:
		out.Tags = []string{"even"}
	}
	return []vertex.Message[int]{out}, nil
}

// checkAgainstStats compares every per-replica family of a scrape with
// p.Stats, exactly.
func checkAgainstStats(t *testing.T, fams map[string]*dto.MetricFamily, stats []pipeline.VertexStats) {
	t.Helper()
	for _, v := range stats {
		for r, c := range v.PerReplica {
			l := map[string]string{"pipeline": "scraped", "vertex": v.Name, "vertex_type": v.Kind, "replica": strconv.Itoa(r)}
			for fam, want := range map[string]int64{
				"runnel_forwarder_data_read_total":   c.Read,
				"runnel_forwarder_write_total":       c.Written,
				"runnel_forwarder_ack_total":         c.Acked,
				"runnel_forwarder_retry_total":       c.Retried,
				"runnel_forwarder_inflight_messages": c.InFlight,
			} {
				if got, ok := sample(fams, fam, l); !ok || got != float64(want) {
					t.Errorf("%s{vertex=%s,replica=%d} = %v (found %v), Stats say %d", fam, v.Name, r, got, ok, want)
				}
			}
			for reason, want := range map[string]int64{"drop_tag": c.Drops.Tagged, "no_edge": c.Drops.NoEdge,
				"buffer_full": c.Drops.Full, "retries_exhausted": c.Drops.Retries, "late": c.Drops.Late} {
				l["reason"] = reason
				if got, ok := sample(fams, "runnel_forwarder_drop_total", l); !ok || got != float64(want) {
					t.Errorf("drops of %s replica %d for %s = %v (found %v), Stats say %d", v.Name, r, reason, got, ok, want)
				}
			}
		}
		l := map[string]string{"vertex": v.Name}
		if got, ok := sample(fams, "runnel_forwarder_processing_time_seconds", l); !ok || got != float64(v.Latency.Count) {
			t.Errorf("processing time of %s: %v observations (found %v), Stats say %d", v.Name, got, ok, v.Latency.Count)
		}
		for _, part := range v.Partitions {
			l := map[string]string{"vertex": v.Name, "partition": strconv.Itoa(part.Partition)}
			if got, ok := sample(fams, "runnel_buffer_pending_messages", l); !ok || got != float64(part.Pending) {
				t.Errorf("pending of %s partition %d = %v (found %v), Stats say %d", v.Name, part.Partition, got, ok, part.Pending)
			}
		}
	}
}

// TestMetricsMatchStats scrapes /metrics from a running pipeline once its
// first 1000 messages are through (the source, a channel, stays open),
// and again after the run: every per-replica count is the one Stats
// gives, each vertex read exactly what it was sent, and the edges carry
// what their destinations read.
func TestMetricsMatchStats(t *testing.T) {
	const n = 1000
	ch := make(chan int)
	p := pipeline.New("scraped")
	src := pipeline.Source(p, "numbers", vertex.FromChannel(ch))
	odd := pipeline.FlatMap(p, "split", src, split, vertex.Replicas(2), vertex.Partitions(2))
	pipeline.Sink(p, "odds", odd.Tagged("odd"), vertex.Blackhole[int](), vertex.BufferCapacity(64))
	srv := serve(t, p)
	wait := runAsync(t, p)
	for i := range n {
		ch <- i
	}
	waitFor(t, "every vertex acked what it read", func() bool {
		st := p.Stats()
		return st[0].Acked == n && st[1].Acked == n && st[2].Acked == n/2
	})

	fams := scrape(t, srv.URL+"/metrics")
	stats := p.Stats() // nothing moves: the source waits for the channel
	checkAgainstStats(t, fams, stats)
	read := map[string]int64{}
	for _, v := range stats {
		read[v.Name] = v.Read
	}
	if read["numbers"] != n || read["split"] != n || read["odds"] != n/2 {
		t.Fatalf("reads %v, want numbers and split %d, odds %d", read, n, n/2)
	}
	if got, _ := sample(fams, "runnel_forwarder_drop_total", map[string]string{"vertex": "split", "replica": "0", "reason": "drop_tag"}); got+
		must(sample(fams, "runnel_forwarder_drop_total", map[string]string{"vertex": "split", "replica": "1", "reason": "drop_tag"})) != n/10 {
		t.Errorf("split dropped %v by tag over its replicas, want %d", got, n/10)
	}
	for _, e := range []struct{ from, to string }{{"numbers", "split"}, {"split", "odds"}} {
		if got, _ := sample(fams, "runnel_edge_write_total", map[string]string{"from": e.from, "to": e.to}); got != float64(read[e.to]) {
			t.Errorf("edge %s->%s wrote %v, %s read %d", e.from, e.to, got, e.to, read[e.to])
		}
	}
	if got, ok := sample(fams, "runnel_buffer_capacity_messages", map[string]string{"vertex": "odds"}); !ok || got != 64 {
		t.Errorf("capacity of odds = %v (found %v), want 64", got, ok)
	}
	if got, ok := sample(fams, "runnel_buffer_usage_ratio", map[string]string{"vertex": "odds"}); !ok || got != 0 {
		t.Errorf("usage of a drained buffer = %v (found %v), want 0", got, ok)
	}
	if _, ok := sample(fams, "runnel_vertex_watermark_lag_seconds", map[string]string{"vertex": "numbers"}); !ok {
		t.Errorf("no watermark lag for the source")
	}

	close(ch)
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	fams = scrape(t, srv.URL+"/metrics")
	checkAgainstStats(t, fams, p.Stats())
	if got, _ := sample(fams, "runnel_vertex_watermark_lag_seconds", map[string]string{"vertex": "odds"}); got != 0 {
		t.Errorf("lag of an ended vertex = %v, want 0", got)
	}
}

func must(v float64, _ bool) float64 { return v }

// TestRegisterOnTheUsersRegistry: Register puts the metrics on the user's
// registry beside theirs, two pipelines share it, the same one twice is
// refused, and the handler serves that registry with Gatherer.
func TestRegisterOnTheUsersRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	mine := prometheus.NewCounter(prometheus.CounterOpts{Name: "my_requests_total", Help: "mine"})
	reg.MustRegister(mine)
	mine.Add(3)
	a := pipeline.New("a")
	pipeline.Sink(a, "out", pipeline.Source(a, "in", vertex.FromSlice([]int{1, 2, 3})), vertex.Blackhole[int]())
	b := pipeline.New("b")
	pipeline.Sink(b, "out", pipeline.Source(b, "in", vertex.FromSlice([]int{1})), vertex.Blackhole[int]())
	for _, p := range []*pipeline.Pipeline{a, b} {
		if err := monitor.Register(reg, p); err != nil {
			t.Fatalf("register %s: %v", p.Name(), err)
		}
		if err := p.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	var dup prometheus.AlreadyRegisteredError
	if err := monitor.Register(reg, a); !errors.As(err, &dup) {
		t.Fatalf("second registration of a: %v, want an AlreadyRegisteredError", err)
	}
	srv := serve(t, a, monitor.Gatherer(reg))
	fams := scrape(t, srv.URL+"/metrics")
	if got, _ := sample(fams, "my_requests_total", nil); got != 3 {
		t.Errorf("the user's counter = %v, want 3", got)
	}
	for p, want := range map[string]float64{"a": 3, "b": 1} {
		if got, ok := sample(fams, "runnel_forwarder_data_read_total", map[string]string{"pipeline": p, "vertex": "out"}); !ok || got != want {
			t.Errorf("pipeline %s: out read %v (found %v), want %v", p, got, ok, want)
		}
	}
	// Namespace "" gives Numaflow's bare names.
	bare := serve(t, b, monitor.Namespace(""))
	if got, ok := sample(scrape(t, bare.URL+"/metrics"), "forwarder_data_read_total", map[string]string{"vertex": "in"}); !ok || got != 1 {
		t.Errorf("forwarder_data_read_total{vertex=in} = %v (found %v), want 1", got, ok)
	}
}

// TestOptionErrors: every bad option is an *isb.OptionError naming it.
func TestOptionErrors(t *testing.T) {
	p := pipeline.New("opts")
	for _, c := range []struct {
		opt  monitor.Option
		name string
	}{
		{monitor.Refresh(0), "Refresh"},
		{monitor.Namespace("9lives"), "Namespace"},
		{monitor.Namespace("with-dash"), "Namespace"},
		{nil, "monitor.Option"},
	} {
		_, err := monitor.Handler(p, c.opt)
		var oe *isb.OptionError
		if !errors.As(err, &oe) || oe.Option != c.name || !errors.Is(err, isb.ErrInvalidOption) {
			t.Errorf("Handler with a bad %s: %v", c.name, err)
		}
		if _, err := monitor.NewCollector(p, c.opt); !errors.As(err, &oe) {
			t.Errorf("NewCollector with a bad %s: %v", c.name, err)
		}
	}
	if _, err := monitor.Handler(nil); !errors.Is(err, monitor.ErrNilPipeline) {
		t.Errorf("Handler(nil) = %v", err)
	}
	if err := monitor.Register(prometheus.NewRegistry(), nil); !errors.Is(err, monitor.ErrNilPipeline) {
		t.Errorf("Register(nil) = %v", err)
	}
}
