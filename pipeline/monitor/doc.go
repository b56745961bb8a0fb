// Package monitor shows a running pipeline: Prometheus metrics on the
// user's registry, a /status JSON and a page that draws the DAG with live
// rates, backlog and watermarks, all read from pipeline.Status.
//
//	p := pipeline.New("orders", ...)
//	// ... vertices ...
//	if err := monitor.Register(prometheus.DefaultRegisterer, p); err != nil { ... } // metrics only
//	h, err := monitor.Handler(p)                                                     // or the page, /status and /metrics
//	mux.Handle("/pipeline/", http.StripPrefix("/pipeline", h))
//	go monitor.ListenAndServe(ctx, ":8080", p)                                       // or a server of its own
//
// # Why a package of its own
//
// github.com/prometheus/client_golang is imported here and nowhere else:
// a program that embeds a pipeline without Prometheus does not compile
// it in (with its protobuf and procfs dependencies). The counters are the
// forwarders' own (package pipeline's Stats), which the data path updates
// per batch whether or not anyone looks; the collector turns them into
// constant metrics at scrape time, so scraping costs the data path
// nothing and no metric is incremented per message. Nothing is global:
// the collector goes on the registry the user gives, and the handler
// serves a registry of its own unless Gatherer names the user's.
//
// # Metrics
//
// Every name has the prefix of Namespace ("runnel_" by default) and every
// metric the constant label pipeline. Forwarder families follow Numaflow's
// names; times are in seconds and histograms share buckets from 25µs to
// 10s.
//
//	forwarder_data_read_total{vertex,vertex_type,replica}           counter
//	forwarder_write_total{vertex,vertex_type,replica}               counter
//	forwarder_ack_total{vertex,vertex_type,replica}                 counter
//	forwarder_drop_total{vertex,vertex_type,replica,reason}         counter: reason drop_tag, no_edge, buffer_full, retries_exhausted, late
//	forwarder_retry_total{vertex,vertex_type,replica}               counter
//	forwarder_fallback_total{vertex,vertex_type,replica}            counter (sinks)
//	forwarder_inflight_messages{vertex,vertex_type,replica}         gauge
//	forwarder_processing_time_seconds{vertex,vertex_type}           histogram: read of a batch to the ack of each chunk of it
//	buffer_pending_messages{vertex,vertex_type,partition}           gauge: not yet committed by the vertex
//	buffer_capacity_messages{vertex,vertex_type}                    gauge (bounded buffers)
//	buffer_usage_ratio{vertex,vertex_type}                          gauge (bounded buffers; 1 is full)
//	vertex_watermark_seconds{vertex,vertex_type}                    gauge: Unix seconds
//	vertex_watermark_lag_seconds{vertex,vertex_type}                gauge: wall clock minus watermark, 0 once the input ended
//	reduce_open_windows{vertex,vertex_type,replica}                 gauge
//	reduce_results_total{vertex,vertex_type,replica}                counter
//	reduce_late_messages_total{vertex,vertex_type,replica}          counter
//	edge_write_total{from,to}                                       counter
//	buffer_flush_seconds{vertex,vertex_type}                        histogram: fdatasync of a durable (mmap) buffer
//	wal_commit_seconds{vertex,vertex_type}                          histogram: a reduce WAL's group commit (write and fsync)
//	storage_errors_total{vertex,vertex_type,op}                     counter: failed JetStream calls, op publish, fetch, ...
//
// Rates are Prometheus's to compute (rate(runnel_forwarder_data_read_total[1m]));
// /status carries the pipeline's own 1/5/15-minute rates for the page.
//
// # /status
//
// GET /status answers pipeline.Status as JSON (times in RFC 3339, counts
// as numbers). The schema, every field always present unless marked
// "omitted when ...":
//
//	{
//	  "pipeline": string,
//	  "state": "new" | "running" | "stopped",
//	  "run": string,                 omitted before Run
//	  "storage": string,             e.g. "memory", "mmap(/var/lib/app)"
//	  "started": time,               omitted before Run
//	  "time": time,                  when the snapshot was taken
//	  "vertices": [ {
//	    "name": string, "kind": "source" | "map" | "reduce" | "sink", "replicas": int,
//	    "read", "written", "acked", "dropped", "retried", "fallback",
//	    "results", "late", "in_flight", "peak_in_flight", "open_windows": int,
//	    "drops": {"drop_tag", "no_edge", "buffer_full", "retries_exhausted", "late": int},
//	    "pending": int,              the input buffer's uncommitted messages (0 for sources)
//	    "per_replica": [ {the counters above, "read" to "drops"} ],
//	    "watermark": time,           omitted while unknown; year 2262 once the input ended
//	    "partitions": [ {"partition": int, "pending": int, "replica": int (-1: none here)} ], omitted for sources
//	    "capacity": int, "used": int, "full": bool,   capacity 0: unbounded or kept by the storage
//	    "rate": {"1m", "5m", "15m": float},           messages read per second
//	    "latency": histogram,        processing time
//	    "flush": histogram,          omitted unless the buffer flushes to disk
//	    "wal_commit": histogram,     omitted without a reduce WAL
//	    "storage_errors": {op: int}, omitted without any
//	    "last_error": {"time": time, "replica": int, "message": string}, omitted without any
//	  } ],
//	  "edges": [ {
//	    "from": string, "to": string,
//	    "condition": string,         omitted without a Where
//	    "late": true,                omitted unless the late stream of a reduce
//	    "discard": true,             omitted unless the edge discards when full
//	    "written": int, "discarded": int,
//	    "rate": {"1m", "5m", "15m": float},           messages written per second
//	    "watermark": time,           omitted while unknown
//	    "full": bool                 the destination's buffer has no room
//	  } ],
//	  "error": string                omitted unless the run failed
//	}
//
// A histogram is {"bounds": [seconds...], "counts": [int...], "count":
// int, "sum": seconds}: counts has one more entry than bounds (the last
// counts what is above every bound), and is per bucket, not cumulative.
//
// # The page
//
// GET / draws the DAG in SVG: vertices in columns by their distance from
// the sources, each with its read rate, totals, backlog (pending against
// capacity) and watermark with its lag; edges with their write rate and
// watermark, drawn red when the destination's buffer is full and dashed
// for a reduce's late stream; and a table of every vertex. It fetches
// /status again every Refresh. Its HTML, script and style are embedded
// in the binary: no build step, nothing loaded from elsewhere.
package monitor
