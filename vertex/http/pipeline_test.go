package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/vertex/http"
)

// collector is the server behind the sink: it counts the ids of the
// NDJSON records {"id": n, "via": "map"} it is POSTed.
type collector struct {
	mu     sync.Mutex
	counts map[int]int
	total  atomic.Int64
	// before, when set, runs before each request is read (the pushback
	// test holds the sink back with it); its error, if any, is the answer.
	before func(r *nethttp.Request) (status int, err error)
}

func (c *collector) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	if c.before != nil {
		if status, err := c.before(r); err != nil {
			nethttp.Error(w, err.Error(), status)
			return
		}
	}
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	for line := range strings.Lines(string(b)) {
		var rec struct {
			ID  int
			Via string
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Via != "map" {
			nethttp.Error(w, fmt.Sprintf("record %q: %v", line, err), 400)
			return
		}
		c.counts[rec.ID]++
		c.total.Add(1)
	}
}

// clientStats is what the clients were answered.
type clientStats struct {
	accepted    atomic.Int64 // records answered 200
	unavailable atomic.Int64 // 503s, each with Retry-After
	noRetry     atomic.Int64 // 503s without Retry-After
}

// sendAll posts the records [from, to) in JSON-array batches of size per,
// each until it is answered 200, retrying a 503 after a millisecond (a
// real client waits Retry-After). It reports any other answer.
func sendAll(t *testing.T, client *nethttp.Client, url string, from, to, per int, st *clientStats) {
	for start := from; start < to; start += per {
		var recs []string
		for id := start; id < min(start+per, to); id++ {
			recs = append(recs, fmt.Sprintf(`{"id":%d}`, id))
		}
		body := "[" + strings.Join(recs, ",") + "]"
		for {
			a := post(t, client, url, "application/json", body)
			if a.status == 200 {
				st.accepted.Add(int64(len(recs)))
				break
			}
			if a.status != 503 {
				t.Errorf("batch at %d: %+v", start, a)
				return
			}
			if st.unavailable.Add(1); a.retryAfter == "" {
				st.noRetry.Add(1)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// runHTTP runs HTTP source -> map -> HTTP sink while clients send
// clients*perClient records, and stops the pipeline once the collector has
// every one; st counts what the clients were answered.
func runHTTP(t *testing.T, src *http.Source, coll *collector, st *clientStats, clients, perClient, batch int, opts ...vertex.Option) {
	t.Helper()
	in := httptest.NewServer(src)
	defer in.Close()
	out := httptest.NewServer(coll)
	defer out.Close()
	p := pipeline.New("http")
	recs := pipeline.Source(p, "in", src, vertex.BatchSize(32))
	tagged := pipeline.Map(p, "via", recs, func(_ context.Context, v []byte) ([]byte, error) {
		var rec map[string]any
		if err := json.Unmarshal(v, &rec); err != nil {
			return nil, err
		}
		rec["via"] = "map"
		return json.Marshal(rec)
	}, opts...)
	pipeline.Sink(p, "out", tagged, http.NewSink(out.URL), vertex.BatchSize(50), vertex.BufferCapacity(100))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx) }()

	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sendAll(t, in.Client(), in.URL, c*perClient, (c+1)*perClient, batch, st)
		}()
	}
	wg.Wait()
	total := int64(clients * perClient)
	for deadline := time.Now().Add(2 * time.Minute); coll.total.Load() < total; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the collector has %d of %d records after 2 minutes", coll.total.Load(), total)
		}
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if got := st.accepted.Load(); got != total {
		t.Fatalf("clients were answered 200 for %d records, want %d", got, total)
	}
	for id := range int(total) {
		if c := coll.counts[id]; c != 1 {
			t.Fatalf("record %d reached the collector %d times, want once", id, c)
		}
	}
	if n := coll.total.Load(); n != total {
		t.Fatalf("the collector got %d records, want %d", n, total)
	}
}

// TestPipelineHTTPToHTTP: clients POST batches to the source, a map tags
// them, the sink POSTs them to a collector: every record answered 200
// reaches it exactly once.
func TestPipelineHTTPToHTTP(t *testing.T) {
	coll := &collector{counts: map[int]int{}}
	st := &clientStats{}
	runHTTP(t, http.NewSource(), coll, st, 4, 2500, 25, vertex.Replicas(2))
	t.Logf("10000 records in batches of 25 from 4 clients, each once at the collector; %d answers 503", st.unavailable.Load())
}

// TestPipelinePushbackSlowSink: the collector takes nothing until a client
// was answered 503, then slowly. The source fills up to its Capacity and
// never beyond (sampled the whole run), every 503 carries Retry-After, and
// every record answered 200 reaches the collector exactly once.
func TestPipelinePushbackSlowSink(t *testing.T) {
	// 4 clients, each waiting for its batch of 10 to be answered, hold
	// up to 40 records: more than the capacity.
	const capacity, batch = 25, 10
	src := http.NewSource(http.Capacity(capacity))
	release := make(chan struct{})
	coll := &collector{counts: map[int]int{}, before: func(*nethttp.Request) (int, error) {
		<-release
		time.Sleep(time.Millisecond)
		return 0, nil
	}}
	st := &clientStats{}
	var most atomic.Int64
	stop, sampled := make(chan struct{}), make(chan struct{})
	var halt sync.Once
	t.Cleanup(func() { halt.Do(func() { close(stop) }) }) // when the run fails
	go func() {
		defer close(sampled)
		for {
			if n := int64(src.Buffered()); n > most.Load() {
				most.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Microsecond):
			}
		}
	}()
	go func() {
		// The collector is released once a client was refused.
		defer close(release)
		for st.unavailable.Load() == 0 {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	runHTTP(t, src, coll, st, 4, 500, batch, vertex.BatchSize(10), vertex.MaxInFlight(10), vertex.BufferCapacity(20))
	halt.Do(func() { close(stop) })
	<-sampled
	if m := most.Load(); m > capacity || m <= capacity-batch {
		t.Fatalf("the source held at most %d records; want it filled (more than %d) and never past its Capacity %d", m, capacity-batch, capacity)
	}
	if n := st.noRetry.Load(); n > 0 {
		t.Fatalf("%d answers 503 without Retry-After", n)
	}
	t.Logf("2000 records each once at the collector; %d answers 503 (all with Retry-After); the source held at most %d records (Capacity %d)",
		st.unavailable.Load(), most.Load(), capacity)
}

// TestPipelineSinkServerDown: the collector answers 503 for 2 seconds
// once it has 1000 of 3000 records. The sink, retried by its default
// policy (vertex.RemoteRetry: the vertex sets none, and the 5 attempts of
// the general default would have failed the run within 150ms), waits
// and resumes: every record arrives once, the vertex counts the retries,
// and the log has the failures rate-limited (fewer lines than failed
// POSTs, the cause in each) and the recovery.
func TestPipelineSinkServerDown(t *testing.T) {
	const total = 3000
	coll := &collector{counts: map[int]int{}}
	var mu sync.Mutex
	var downUntil time.Time
	refusedPosts := 0
	coll.before = func(*nethttp.Request) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		if downUntil.IsZero() && coll.total.Load() >= 1000 {
			downUntil = time.Now().Add(2 * time.Second)
		}
		if time.Now().Before(downUntil) {
			refusedPosts++
			return 503, fmt.Errorf("down for maintenance")
		}
		return 0, nil
	}
	out := httptest.NewServer(coll)
	defer out.Close()
	core, logs := observer.New(zapcore.InfoLevel)
	p := pipeline.New("down", pipeline.WithLogger(zap.New(core)))
	recs := pipeline.Source(p, "gen", vertex.Generator(func(i int64) []byte {
		return fmt.Appendf(nil, `{"id":%d,"via":"map"}`, i)
	}).WithCount(total), vertex.BatchSize(50))
	pipeline.Sink(p, "out", recs, http.NewSink(out.URL), vertex.BatchSize(50))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	for id := range total {
		if c := coll.counts[id]; c != 1 {
			t.Fatalf("record %d reached the collector %d times, want once", id, c)
		}
	}
	var retried int64
	for _, vs := range p.Stats() {
		if vs.Name == "out" {
			retried = vs.Retried
		}
	}
	failLines := logs.FilterMessage("sink write failed, retrying").All()
	recovered := logs.FilterMessage("sink write succeeded after failures").Len()
	if refusedPosts < 2 || retried < int64(refusedPosts) || len(failLines) == 0 || len(failLines) >= refusedPosts || recovered == 0 {
		t.Fatalf("%d POSTs refused, %d retries counted, %d failure lines, %d recovery lines; want at least 2 refused, retries counted, fewer lines than refusals, and a recovery",
			refusedPosts, retried, len(failLines), recovered)
	}
	for _, l := range failLines {
		if cause := fmt.Sprint(l.ContextMap()["error"]); !strings.Contains(cause, "status 503") || !strings.Contains(cause, "down for maintenance") {
			t.Fatalf("a failure line's cause is %q, want the status and the answer", cause)
		}
	}
	t.Logf("all %d records once; %d POSTs refused over the 2s outage, %d message retries, %d failure lines, %d recovery lines",
		total, refusedPosts, retried, len(failLines), recovered)
}

// poisonous refuses (400) a batch holding a record whose id is a multiple
// of 100.
func poisonous(r *nethttp.Request) (int, error) {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(strings.NewReader(string(b)))
	for line := range strings.Lines(string(b)) {
		var rec struct{ ID int }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.ID%100 == 0 {
			return 400, fmt.Errorf("record %d is poison", rec.ID)
		}
	}
	return 0, nil
}

// TestPipelineSinkClientError: a batch the server refuses with 400 goes
// to the fallback sink whole, and is not retried: every record once, at
// the collector or the fallback, every poison record at the fallback.
// Without a fallback the run fails, naming the status and the answer.
func TestPipelineSinkClientError(t *testing.T) {
	const total = 1000
	run := func(t *testing.T, fallback vertex.Sink[[]byte]) (*collector, error) {
		coll := &collector{counts: map[int]int{}, before: poisonous}
		out := httptest.NewServer(coll)
		defer out.Close()
		p := pipeline.New("poison")
		recs := pipeline.Source(p, "gen", vertex.Generator(func(i int64) []byte {
			return fmt.Appendf(nil, `{"id":%d,"via":"map"}`, i)
		}).WithCount(total), vertex.BatchSize(50))
		sink := http.NewSink(out.URL)
		if fallback != nil {
			pipeline.SinkWithFallback(p, "out", recs, sink, fallback, vertex.BatchSize(25))
		} else {
			pipeline.Sink(p, "out", recs, sink, vertex.BatchSize(25))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		return coll, p.Run(ctx)
	}
	var mu sync.Mutex
	fell := map[int]int{}
	fallback := vertex.Func(func(_ context.Context, msgs []vertex.Message[[]byte]) error {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			var rec struct{ ID int }
			json.Unmarshal(m.Value, &rec)
			fell[rec.ID]++
		}
		return nil
	})
	coll, err := run(t, fallback)
	if err != nil {
		t.Fatal(err)
	}
	for id := range total {
		if c := coll.counts[id] + fell[id]; c != 1 || id%100 == 0 && fell[id] != 1 {
			t.Fatalf("record %d: %d at the collector, %d at the fallback; want once, poison at the fallback", id, coll.counts[id], fell[id])
		}
	}
	t.Logf("%d records at the collector, %d at the fallback (the batches with poison)", coll.total.Load(), len(fell))

	_, err = run(t, nil)
	var se *http.StatusError
	if !errors.As(err, &se) || se.Status != 400 || !strings.Contains(err.Error(), "is poison") {
		t.Fatalf("run without fallback: %v, want the 400 with its answer", err)
	}
}
