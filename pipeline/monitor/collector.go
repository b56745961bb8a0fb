package monitor

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/watermark"
)

// collector is a prometheus.Collector over one pipeline's Status: every
// value is read from the counters the forwarders keep anyway, at scrape
// time, so the data path pays nothing for being scraped.
type collector struct {
	p *pipeline.Pipeline
	d descs
}

// descs are the collector's metric families.
type descs struct {
	read, write, ack, drop, retry, fallback, inflight *prometheus.Desc
	processing                                        *prometheus.Desc
	pending, capacity, usage                          *prometheus.Desc
	wm, wmLag                                         *prometheus.Desc
	openWindows, results, late                        *prometheus.Desc
	edgeWrite                                         *prometheus.Desc
	flush, walCommit, storageErrs                     *prometheus.Desc
}

// Label names, as Numaflow names them where it has them.
const (
	lVertex    = "vertex"
	lType      = "vertex_type"
	lReplica   = "replica"
	lPartition = "partition"
	lReason    = "reason"
	lFrom      = "from"
	lTo        = "to"
	lOp        = "op"
)

func newDescs(ns, pipelineName string) descs {
	constant := prometheus.Labels{"pipeline": pipelineName}
	replica := []string{lVertex, lType, lReplica}
	vertex := []string{lVertex, lType}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(ns, "", name), help, labels, constant)
	}
	return descs{
		read:        d("forwarder_data_read_total", "Messages a replica read from its input buffer or its source.", replica...),
		write:       d("forwarder_write_total", "Messages a replica wrote to downstream buffers, or a sink delivered.", replica...),
		ack:         d("forwarder_ack_total", "Input messages a replica acknowledged (done, dropped ones included).", replica...),
		drop:        d("forwarder_drop_total", "Messages a replica dropped, by reason: drop_tag, no_edge, buffer_full, retries_exhausted, late.", append(replica, lReason)...),
		retry:       d("forwarder_retry_total", "Retries of user-function calls or sink writes, per message.", replica...),
		fallback:    d("forwarder_fallback_total", "Messages a sink delivered to its fallback sink.", replica...),
		inflight:    d("forwarder_inflight_messages", "Messages a replica read and has not acknowledged yet.", replica...),
		processing:  d("forwarder_processing_time_seconds", "Time from the read of a batch to the acknowledgement of its messages, observed once per chunk (sources: per batch).", vertex...),
		pending:     d("buffer_pending_messages", "Messages of a vertex's input buffer partition that the vertex has not committed.", lVertex, lType, lPartition),
		capacity:    d("buffer_capacity_messages", "Capacity of a vertex's bounded input buffer, shared by its partitions.", vertex...),
		usage:       d("buffer_usage_ratio", "Share of a bounded input buffer's capacity in use (1: full).", vertex...),
		wm:          d("vertex_watermark_seconds", "A vertex's event-time watermark, Unix seconds.", vertex...),
		wmLag:       d("vertex_watermark_lag_seconds", "How far a vertex's watermark is behind the wall clock (0 once its input ended).", vertex...),
		openWindows: d("reduce_open_windows", "Windows a reduce replica holds open, one per window and key.", replica...),
		results:     d("reduce_results_total", "Window results a reduce replica emitted.", replica...),
		late:        d("reduce_late_messages_total", "Messages a reduce replica found late (all their windows closed).", replica...),
		edgeWrite:   d("edge_write_total", "Messages written along an edge of the DAG.", lFrom, lTo),
		flush:       d("buffer_flush_seconds", "Time of the flushes (fdatasync) that made a vertex's input buffer durable.", vertex...),
		walCommit:   d("wal_commit_seconds", "Time of a reduce vertex's WAL group commits (write and fsync).", vertex...),
		storageErrs: d("storage_errors_total", "Failed calls to a vertex's input buffer's remote storage (JetStream), by operation: publish, fetch, ...", lVertex, lType, lOp),
	}
}

func (d descs) all() []*prometheus.Desc {
	return []*prometheus.Desc{d.read, d.write, d.ack, d.drop, d.retry, d.fallback, d.inflight, d.processing,
		d.pending, d.capacity, d.usage, d.wm, d.wmLag, d.openWindows, d.results, d.late, d.edgeWrite,
		d.flush, d.walCommit, d.storageErrs}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.d.all() {
		ch <- d
	}
}

// Collect implements prometheus.Collector: one Status, turned into
// constant metrics.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.p.Status()
	d := c.d
	counter := func(desc *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	for _, v := range st.Vertices {
		for r, rc := range v.PerReplica {
			l := []string{v.Name, v.Kind, strconv.Itoa(r)}
			counter(d.read, rc.Read, l...)
			counter(d.write, rc.Written, l...)
			counter(d.ack, rc.Acked, l...)
			for _, dr := range dropsOf(rc.Drops) {
				counter(d.drop, dr.n, append(l, dr.reason)...)
			}
			counter(d.retry, rc.Retried, l...)
			if v.Kind == "sink" {
				counter(d.fallback, rc.Fallback, l...)
			}
			gauge(d.inflight, float64(rc.InFlight), l...)
			if v.Kind == "reduce" {
				gauge(d.openWindows, float64(rc.OpenWindows), l...)
				counter(d.results, rc.Results, l...)
				counter(d.late, rc.Late, l...)
			}
		}
		l := []string{v.Name, v.Kind}
		if len(v.PerReplica) > 0 {
			ch <- histogram(d.processing, v.Latency, l...)
		}
		for _, part := range v.Partitions {
			gauge(d.pending, float64(part.Pending), v.Name, v.Kind, strconv.Itoa(part.Partition))
		}
		if v.Capacity > 0 {
			gauge(d.capacity, float64(v.Capacity), l...)
			gauge(d.usage, float64(v.Used)/float64(v.Capacity), l...)
		}
		if !v.Watermark.IsZero() {
			gauge(d.wm, float64(v.Watermark.UnixNano())/1e9, l...)
			lag := 0.0
			if !v.Watermark.Equal(watermark.Max) {
				lag = st.Time.Sub(v.Watermark).Seconds()
			}
			gauge(d.wmLag, lag, l...)
		}
		if v.Flush != nil {
			ch <- histogram(d.flush, *v.Flush, l...)
		}
		if v.WALCommit != nil {
			ch <- histogram(d.walCommit, *v.WALCommit, l...)
		}
		for op, n := range v.StorageErrors {
			counter(d.storageErrs, n, v.Name, v.Kind, op)
		}
	}
	for _, e := range st.Edges {
		counter(d.edgeWrite, e.Written, e.From, e.To)
	}
}

// dropReason is one reason's count.
type dropReason struct {
	reason string
	n      int64
}

// dropsOf lists the reasons of d, each with its label: every one, zero
// or not, so that a rate over them never starts from a missing series.
func dropsOf(d pipeline.Drops) []dropReason {
	return []dropReason{{"drop_tag", d.Tagged}, {"no_edge", d.NoEdge}, {"buffer_full", d.Full}, {"retries_exhausted", d.Retries}, {"late", d.Late}}
}

// histogram is h as a constant Prometheus histogram (cumulative buckets).
func histogram(desc *prometheus.Desc, h pipeline.Histogram, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(h.Bounds))
	var cum uint64
	for i, b := range h.Bounds {
		cum += h.Counts[i]
		buckets[b] = cum
	}
	return prometheus.MustNewConstHistogram(desc, h.Count, h.Sum, buckets, labels...)
}
