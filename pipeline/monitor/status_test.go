package monitor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/pipeline/monitor"
	"github.com/runnel-dev/runnel/vertex"
)

// windowedCounts is a keyed 1-second window count over 400 events on
// durable storage: its reduce keeps a WAL and its buffers flush.
func windowedCounts(t *testing.T) *pipeline.Pipeline {
	p := pipeline.New("windows", pipeline.WithStorage(pipeline.MMap(t.TempDir())))
	gen := vertex.Generator(func(i int64) int64 { return i }).WithCount(400).WithKeys(4).
		WithEventTime(func(i int64) time.Time { return time.Unix(0, 0).Add(time.Duration(i) * 10 * time.Millisecond) })
	src := pipeline.Source(p, "events", gen)
	counts, late := pipeline.Reduce(p, "count", src, vertex.Fixed(time.Second), vertex.Counting[int64]())
	pipeline.Sink(p, "out", counts, vertex.Blackhole[vertex.Windowed[int64]]())
	pipeline.Sink(p, "late", late, vertex.Blackhole[int64]())
	return p
}

// TestStatusSchema: /status answers the documented schema, with the
// values of Status: every field of every vertex and edge, histograms with
// one count more than bounds, the WAL's and the buffers' flushes.
func TestStatusSchema(t *testing.T) {
	p := windowedCounts(t)
	srv := serve(t, p)
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	body, ct := get(t, srv.URL+"/status")
	if ct != "application/json" {
		t.Fatalf("content type %q", ct)
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	requireFields(t, "status", doc, map[string]string{"pipeline": "string", "state": "string", "run": "string",
		"storage": "string", "started": "time", "time": "time", "vertices": "array", "edges": "array"})
	if doc["state"] != "stopped" || doc["pipeline"] != "windows" || !strings.HasPrefix(doc["storage"].(string), "mmap(") {
		t.Errorf("status header %v", doc)
	}
	if _, ok := doc["error"]; ok {
		t.Errorf("error present after a clean run: %v", doc["error"])
	}
	counters := map[string]string{"read": "number", "written": "number", "acked": "number", "dropped": "number",
		"retried": "number", "fallback": "number", "results": "number", "late": "number", "in_flight": "number",
		"peak_in_flight": "number", "open_windows": "number", "drops": "object"}
	vertices := doc["vertices"].([]any)
	if len(vertices) != 4 {
		t.Fatalf("%d vertices", len(vertices))
	}
	for _, raw := range vertices {
		v := raw.(map[string]any)
		fields := map[string]string{"name": "string", "kind": "string", "replicas": "number", "pending": "number",
			"per_replica": "array", "watermark": "time", "capacity": "number", "used": "number", "full": "bool",
			"rate": "object", "latency": "object"}
		for k, typ := range counters {
			fields[k] = typ
		}
		if v["kind"] != "source" {
			fields["partitions"] = "array"
			fields["flush"] = "object" // every buffer is on mmap
		}
		if v["kind"] == "reduce" {
			fields["wal_commit"] = "object"
		}
		requireFields(t, v["name"].(string), v, fields)
		requireFields(t, v["name"].(string)+".drops", v["drops"].(map[string]any), map[string]string{
			"drop_tag": "number", "no_edge": "number", "buffer_full": "number", "retries_exhausted": "number", "late": "number"})
		requireFields(t, v["name"].(string)+".rate", v["rate"].(map[string]any), map[string]string{"1m": "number", "5m": "number", "15m": "number"})
		for _, h := range []string{"latency", "flush", "wal_commit"} {
			if raw, ok := v[h]; ok {
				requireHistogram(t, v["name"].(string)+"."+h, raw.(map[string]any))
			}
		}
		for _, raw := range v["per_replica"].([]any) {
			requireFields(t, v["name"].(string)+".per_replica", raw.(map[string]any), counters)
		}
		for _, raw := range anyList(v["partitions"]) {
			requireFields(t, v["name"].(string)+".partitions", raw.(map[string]any), map[string]string{"partition": "number", "pending": "number", "replica": "number"})
		}
	}
	edges := doc["edges"].([]any)
	if len(edges) != 3 {
		t.Fatalf("%d edges", len(edges))
	}
	for _, raw := range edges {
		e := raw.(map[string]any)
		requireFields(t, "edge", e, map[string]string{"from": "string", "to": "string", "written": "number", "discarded": "number",
			"rate": "object", "watermark": "time", "full": "bool"})
	}
	if late := edges[2].(map[string]any); late["to"] != "late" || late["late"] != true {
		t.Errorf("the late edge: %v", late)
	}

	// The JSON is Status: decoded, it has the counts Status has.
	var got pipeline.Status
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := p.Status()
	for i, v := range want.Vertices {
		g := got.Vertices[i]
		if g.Name != v.Name || g.Counters != v.Counters || g.Latency.Count != v.Latency.Count || g.Pending != v.Pending {
			t.Errorf("vertex %d: JSON %+v, Status %+v", i, g.Counters, v.Counters)
		}
	}
	count := want.Vertices[1]
	if count.Results != 16 || count.Read != 400 || count.OpenWindows != 0 || count.WALCommit == nil || count.WALCommit.Count == 0 {
		t.Errorf("the reduce: %+v, WAL commits %+v", count.Counters, count.WALCommit)
	}
	if got.Edges[1].Written != 16 || got.Edges[0].Written != 400 {
		t.Errorf("edges %+v", got.Edges)
	}
}

func anyList(v any) []any {
	l, _ := v.([]any)
	return l
}

// requireFields checks that obj has every field with its JSON type
// ("time": a string in RFC 3339).
func requireFields(t *testing.T, what string, obj map[string]any, fields map[string]string) {
	t.Helper()
	for k, typ := range fields {
		v, ok := obj[k]
		if !ok {
			t.Errorf("%s: no field %q", what, k)
			continue
		}
		okType := false
		switch typ {
		case "string":
			_, okType = v.(string)
		case "number":
			_, okType = v.(float64)
		case "bool":
			_, okType = v.(bool)
		case "array":
			_, okType = v.([]any)
		case "object":
			_, okType = v.(map[string]any)
		case "time":
			s, isString := v.(string)
			_, err := time.Parse(time.RFC3339Nano, s)
			okType = isString && err == nil
		}
		if !okType {
			t.Errorf("%s.%s = %v, want a %s", what, k, v, typ)
		}
	}
}

// requireHistogram checks a histogram's shape: counts per bucket, one
// more than bounds, summing to count.
func requireHistogram(t *testing.T, what string, h map[string]any) {
	t.Helper()
	requireFields(t, what, h, map[string]string{"bounds": "array", "counts": "array", "count": "number", "sum": "number"})
	bounds, counts := anyList(h["bounds"]), anyList(h["counts"])
	var sum float64
	for _, c := range counts {
		sum += c.(float64)
	}
	if len(counts) != len(bounds)+1 || sum != h["count"].(float64) {
		t.Errorf("%s: %d bounds, %d counts summing to %v, count %v", what, len(bounds), len(counts), sum, h["count"])
	}
}

// TestPageIsServed: the page, its script and style come from the binary,
// under any mount point.
func TestPageIsServed(t *testing.T) {
	p := pipeline.New("page")
	pipeline.Sink(p, "out", pipeline.Source(p, "in", vertex.FromSlice([]int{1})), vertex.Blackhole[int]())
	srv := serve(t, p, monitor.Refresh(250*time.Millisecond))
	page, ct := get(t, srv.URL+"/")
	if !strings.HasPrefix(ct, "text/html") || !strings.Contains(string(page), `data-refresh="250"`) || !strings.Contains(string(page), `src="assets/dag.js"`) {
		t.Fatalf("page (%s): %s", ct, page)
	}
	js, ct := get(t, srv.URL+"/assets/dag.js")
	if !strings.Contains(ct, "javascript") || !strings.Contains(string(js), `fetch("status"`) {
		t.Fatalf("script (%s): %.200s", ct, js)
	}
	if _, ct := get(t, srv.URL+"/assets/dag.css"); !strings.HasPrefix(ct, "text/css") {
		t.Fatalf("style: %s", ct)
	}
	st, _ := get(t, srv.URL+"/status")
	if !strings.Contains(string(st), `"state":"new"`) {
		t.Fatalf("status before Run: %s", st)
	}
}

// TestListenAndServe serves until its context ends, then returns nil.
func TestListenAndServe(t *testing.T) {
	p := pipeline.New("served")
	pipeline.Sink(p, "out", pipeline.Source(p, "in", vertex.FromSlice([]int{1})), vertex.Blackhole[int]())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- monitor.ListenAndServe(ctx, addr, p) }()
	waitFor(t, "the server answers", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	body, _ := get(t, fmt.Sprintf("http://%s/status", addr))
	if !strings.Contains(string(body), `"pipeline":"served"`) {
		t.Fatalf("status: %s", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ListenAndServe after its context ended: %v", err)
	}
	if err := monitor.ListenAndServe(context.Background(), addr+"0", p); err == nil || !strings.Contains(err.Error(), "monitor:") {
		t.Fatalf("ListenAndServe on a bad address: %v", err)
	}
}
