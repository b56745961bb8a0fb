package monitor_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/pipeline/monitor"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/watermark"
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

// messagesFrom is a source of the messages received from ch, one per
// Read, with their event times and keys; it ends when ch is closed.
type messagesFrom chan vertex.Message[int]

func (s messagesFrom) Read(ctx context.Context, _ int) ([]vertex.Message[int], error) {
	select {
	case m, ok := <-s:
		if !ok {
			return nil, io.EOF
		}
		return []vertex.Message[int]{m}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// histogramOf finds the histogram of fam whose labels include want.
func histogramOf(fams map[string]*dto.MetricFamily, fam string, want map[string]string) *dto.Histogram {
	for _, m := range fams[fam].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if match {
			return m.Histogram
		}
	}
	return nil
}

// TestReduceAndStorageMetricsMatchStats scrapes, after a durable run
// (mmap buffers, a reduce WAL), the families TestMetricsMatchStats leaves
// out: the reduce's open windows, results and late messages, the sink's
// fallback deliveries, the buffers' flush and the WAL's commit times (as
// many samples as Stats counts, and the same sum) and each vertex's
// watermark (also while it runs, where it cannot move). After the run
// every value is final, and exact.
func TestReduceAndStorageMetricsMatchStats(t *testing.T) {
	ch := make(chan vertex.Message[int], 1)
	p := pipeline.New("scraped", pipeline.WithStorage(pipeline.MMap(t.TempDir())))
	in := pipeline.Source[int](p, "in", messagesFrom(ch))
	counts, _ := pipeline.Reduce(p, "count", in, vertex.Fixed(time.Minute), vertex.Counting[int]())
	// The results for key "b" go to the fallback sink; the late stream
	// is not taken, so late messages are dropped.
	main := vertex.SinkFunc[vertex.Windowed[int64]](func(_ context.Context, msgs []vertex.Message[vertex.Windowed[int64]]) ([]vertex.Result, error) {
		res := make([]vertex.Result, len(msgs))
		for i, m := range msgs {
			if slices.Equal(m.Keys, []string{"b"}) {
				res[i] = vertex.ResultFallback
			}
		}
		return res, nil
	})
	pipeline.SinkWithFallback(p, "out", counts, main, vertex.Sink[vertex.Windowed[int64]](vertex.Blackhole[vertex.Windowed[int64]]()))
	srv := serve(t, p)
	wait := runAsync(t, p)

	// Three keys in one minute-window, a message a minute later that
	// closes it, then five late ones for it.
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, k := range []string{"a", "b", "c", "a"} {
		ch <- vertex.Message[int]{ID: fmt.Sprint(i), EventTime: t0.Add(time.Duration(i) * time.Second), Keys: []string{k}, Value: i}
	}
	ch <- vertex.Message[int]{ID: "later", EventTime: t0.Add(2 * time.Minute), Keys: []string{"a"}}
	waitFor(t, "the first window closed", func() bool { return p.Stats()[1].Results == 3 })
	// The source waits for the channel (and does not advance an idle
	// watermark): the source and the reduce stay at the last event.
	waitFor(t, "the reduce read the watermark of the last event", func() bool {
		st := p.Stats()
		return st[0].Watermark.Equal(t0.Add(2*time.Minute)) && st[1].Watermark.Equal(t0.Add(2*time.Minute))
	})
	fams := scrape(t, srv.URL+"/metrics")
	for _, v := range []string{"in", "count"} {
		if got, ok := sample(fams, "runnel_vertex_watermark_seconds", map[string]string{"vertex": v}); !ok || got != float64(t0.Add(2*time.Minute).Unix()) {
			t.Errorf("watermark of %s while running = %v (found %v), Stats say %v", v, got, ok, t0.Add(2*time.Minute))
		}
	}
	for i := range 5 {
		ch <- vertex.Message[int]{ID: fmt.Sprint("late-", i), EventTime: t0.Add(5 * time.Second), Keys: []string{"b"}}
	}
	close(ch)
	if err := wait(); err != nil {
		t.Fatal(err)
	}

	fams = scrape(t, srv.URL+"/metrics")
	stats := p.Stats()
	checkAgainstStats(t, fams, stats)
	red, out := stats[1], stats[2]
	if red.Late != 5 || red.Drops.Late != 5 || red.Results != 4 || red.OpenWindows != 0 || out.Fallback != 1 {
		t.Fatalf("count: late %d (dropped %d), results %d, open windows %d; out: fallback %d; want 5 (5), 4, 0; 1",
			red.Late, red.Drops.Late, red.Results, red.OpenWindows, out.Fallback)
	}
	for _, v := range stats {
		for r, c := range v.PerReplica {
			l := map[string]string{"vertex": v.Name, "replica": strconv.Itoa(r)}
			want := map[string]int64{}
			switch v.Kind {
			case "reduce":
				want = map[string]int64{"runnel_reduce_open_windows": c.OpenWindows,
					"runnel_reduce_results_total": c.Results, "runnel_reduce_late_messages_total": c.Late}
			case "sink":
				want = map[string]int64{"runnel_forwarder_fallback_total": c.Fallback}
			}
			for fam, want := range want {
				if got, ok := sample(fams, fam, l); !ok || got != float64(want) {
					t.Errorf("%s{vertex=%s,replica=%d} = %v (found %v), Stats say %d", fam, v.Name, r, got, ok, want)
				}
			}
		}
		l := map[string]string{"vertex": v.Name, "vertex_type": v.Kind}
		for fam, want := range map[string]*pipeline.Histogram{"runnel_buffer_flush_seconds": v.Flush, "runnel_wal_commit_seconds": v.WALCommit} {
			h := histogramOf(fams, fam, l)
			switch {
			case want == nil && h != nil:
				t.Errorf("%s of %s: %d samples, Stats none", fam, v.Name, h.GetSampleCount())
			case want != nil && (h == nil || h.GetSampleCount() != want.Count || h.GetSampleSum() != want.Sum):
				t.Errorf("%s of %s: %v, Stats say %d samples summing to %v", fam, v.Name, h, want.Count, want.Sum)
			}
		}
		if got, ok := sample(fams, "runnel_vertex_watermark_seconds", l); !ok || got != float64(v.Watermark.UnixNano())/1e9 {
			t.Errorf("watermark of %s = %v (found %v), Stats say %v", v.Name, got, ok, v.Watermark)
		}
	}
	// Durable storage flushes both input buffers; the reduce logs.
	if red.Flush == nil || out.Flush == nil || red.WALCommit == nil || out.WALCommit != nil {
		t.Errorf("flushes of count %v, of out %v; WAL commits of count %v, of out %v: want all but out's WAL",
			red.Flush, out.Flush, red.WALCommit, out.WALCommit)
	}
	for _, v := range stats {
		if !v.Watermark.Equal(watermark.Max) {
			t.Errorf("%s ends at watermark %v, want watermark.Max", v.Name, v.Watermark)
		}
	}
}
