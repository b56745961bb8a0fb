// Command kafka2http reads page views from Kafka, counts them per page in
// one-minute event-time windows, and POSTs each window's counts to an HTTP
// collector: one system in, another out.
//
//	views (vertex/kafka source) ──> per-minute (reduce, keyed by page) ──> encode (map) ──> collector (vertex/http sink)
//	                                          └─ late ──> late (sink)
//
// With no flags it needs nothing but Go: it starts franz-go's kfake
// cluster and an HTTP collector inside the process, produces the views,
// runs the pipeline until the source has read the topic to its end
// (StopAtEnd), and prints what the collector received:
//
//	go run ./examples/kafka2http
//	go run ./examples/kafka2http -brokers localhost:9092            # a real Kafka
//	go run ./examples/kafka2http -url http://collector.example/in   # a real collector
//
// Each view is a record keyed by its page (so a page's views share a
// partition and keep their order) with its event time as the record
// timestamp. They are out of order by up to 8 seconds, and the source's
// watermark trails its records by 10 seconds (MaxDelay), so none is late.
// The sink POSTs NDJSON; the collector keeps a batch once per
// Idempotency-Key, the digest of the batch's message IDs that the sink
// sends, because delivery is at least once: a batch whose answer was lost
// is sent again.
//
// With -brokers the example creates the topic when it is missing and
// reads it from its start in a consumer group of its own, so the counts
// are of everything the topic holds, earlier runs' views included.
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
	rhttp "github.com/runnel-dev/runnel/vertex/http"
	"github.com/runnel-dev/runnel/vertex/kafka"
)

// start is the event time of the first view.
var start = time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)

var pages = []string{"home", "docs", "blog", "pricing", "about"}

// partitions is the partition count of the topic the example creates.
const partitions = 4

// view is one page view: its page and event time.
type view struct {
	page string
	at   time.Time
}

// views returns n page views, one every 250ms from start, each moved
// back by up to 8 seconds (out of order), the page chosen so that the
// counts differ from page to page.
func views(n int) []view {
	out := make([]view, n)
	for i := range out {
		out[i] = view{
			page: pages[(i*i/3+i/11)%len(pages)],
			at:   start.Add(time.Duration(i)*250*time.Millisecond - time.Duration((i*5)%9)*time.Second),
		}
	}
	return out
}

// result is one window's count of one page, as the sink POSTs it (one
// JSON object a line).
type result struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Page  string    `json:"page"`
	Count int64     `json:"count"`
}

// config is what the flags set.
type config struct {
	brokers []string // empty: a kfake cluster in the process
	topic   string
	url     string // empty: a collector in the process
	views   int
}

func main() {
	var cfg config
	brokers := flag.String("brokers", "", "comma-separated Kafka seed brokers (host:port); none starts a kfake cluster in the process")
	flag.StringVar(&cfg.topic, "topic", "page-views", "the topic to produce the views to and read them from")
	flag.StringVar(&cfg.url, "url", "", "where to POST the window counts; none starts a collector in the process and prints what it received")
	flag.IntVar(&cfg.views, "views", 1200, "how many page views to produce")
	flag.Parse()
	if *brokers != "" {
		cfg.brokers = strings.Split(*brokers, ",")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kafka2http:", err)
		os.Exit(1)
	}
}

// run produces cfg.views views to the topic, counts them through Kafka
// and HTTP, and prints to out what the collector received (or, with a
// collector elsewhere, how many results were posted).
func run(ctx context.Context, cfg config, out io.Writer) error {
	brokers, group := cfg.brokers, "kafka2http"
	if len(brokers) == 0 {
		cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, cfg.topic))
		if err != nil {
			return fmt.Errorf("start kfake: %w", err)
		}
		defer cluster.Close()
		brokers = cluster.ListenAddrs()
	} else {
		// A group of its own reads the topic from its start: a group
		// that committed before would resume after its commit and end
		// at once.
		group += "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	if err := produce(ctx, brokers, cfg.topic, views(cfg.views)); err != nil {
		return err
	}

	url := cfg.url
	var col *collector
	if url == "" {
		var err error
		if col, err = startCollector(); err != nil {
			return err
		}
		defer col.close()
		url = col.url
	}

	src, err := kafka.NewSource(ctx, kafka.SourceConfig{
		Brokers: brokers, Group: group, Topics: []string{cfg.topic}, StopAtEnd: true,
	})
	if err != nil {
		return err
	}
	p := pipeline.New("kafka2http", pipeline.Watermarks(pipeline.WatermarkConfig{MaxDelay: 10 * time.Second}))
	in := pipeline.Source(p, "views", src)
	counts, late := pipeline.Reduce(p, "per-minute", in, vertex.Fixed(time.Minute), vertex.Counting[[]byte](),
		vertex.Partitions(2))
	lines := pipeline.Map(p, "encode", counts, func(_ context.Context, w vertex.Windowed[int64]) ([]byte, error) {
		return json.Marshal(result{Start: w.Window.Start, End: w.Window.End, Page: w.Keys[0], Count: w.Value})
	})
	posted := &counting{Sink: rhttp.NewSink(url)}
	pipeline.Sink(p, "collector", lines, posted)
	lateViews := vertex.Blackhole[[]byte]()
	pipeline.Sink(p, "late", late, lateViews)
	if err := p.Run(ctx); err != nil { // closes the source and the sinks
		return err
	}

	if col == nil {
		fmt.Fprintf(out, "posted %d window counts to %s, late: %d\n", posted.n.Load(), url, lateViews.Count())
		return nil
	}
	return report(out, col.results(), lateViews.Count())
}

// produce writes vs to topic, each keyed by its page with its event time
// as the record's timestamp, creating the topic when it is missing.
func produce(ctx context.Context, brokers []string, topic string, vs []view) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	_, err = kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, nil, topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %q: %w", topic, err)
	}
	recs := make([]*kgo.Record, len(vs))
	for i, v := range vs {
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(v.page), Value: []byte(v.page), Timestamp: v.at}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce the views: %w", err)
	}
	return nil
}

// report prints rows by window, pages in name order, then the total.
func report(out io.Writer, rows []result, late int64) error {
	slices.SortFunc(rows, func(a, b result) int {
		return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.Page, b.Page))
	})
	var total int64
	for i, r := range rows {
		if i == 0 || !r.Start.Equal(rows[i-1].Start) {
			if i > 0 {
				fmt.Fprintln(out)
			}
			fmt.Fprintf(out, "%s-%s", r.Start.Format("15:04"), r.End.Format("15:04"))
		}
		fmt.Fprintf(out, "  %s %d", r.Page, r.Count)
		total += r.Count
	}
	_, err := fmt.Fprintf(out, "\nviews counted: %d, late: %d\n", total, late)
	return err
}

// counting is the HTTP sink, counting the results it delivered (its
// workers write concurrently).
type counting struct {
	*rhttp.Sink
	n atomic.Int64
}

func (c *counting) Write(ctx context.Context, msgs []vertex.Message[[]byte]) ([]vertex.Result, error) {
	res, err := c.Sink.Write(ctx, msgs)
	if err == nil {
		for i := range msgs {
			if i >= len(res) || res[i] == vertex.ResultOK {
				c.n.Add(1)
			}
		}
	}
	return res, err
}

// collector is the HTTP server the example POSTs to when no -url is
// given: it keeps the NDJSON results of each batch once per
// Idempotency-Key.
type collector struct {
	url  string
	srv  *http.Server
	done chan struct{}

	mu      sync.Mutex
	seen    map[string]bool
	gotRows []result
}

// startCollector serves a collector on a free port of the loopback
// interface.
func startCollector() (*collector, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("collector: %w", err)
	}
	c := &collector{url: "http://" + ln.Addr().String() + "/counts", seen: map[string]bool{}, done: make(chan struct{})}
	c.srv = &http.Server{Handler: c, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(c.done)
		_ = c.srv.Serve(ln) // ends with close
	}()
	return c, nil
}

// ServeHTTP takes one batch: a POST of NDJSON results.
func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var rows []result
	sc := bufio.NewScanner(r.Body)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var row result
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			// A 4xx: the sink sends the batch to its fallback (none
			// here, so the pipeline fails with this status).
			http.Error(w, "not a result: "+err.Error(), http.StatusBadRequest)
			return
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	key := r.Header.Get(rhttp.IdempotencyKeyHeader)
	c.mu.Lock()
	defer c.mu.Unlock()
	if key == "" || !c.seen[key] {
		c.seen[key] = key != ""
		c.gotRows = append(c.gotRows, rows...)
	}
	w.WriteHeader(http.StatusNoContent)
}

// results returns a copy of what the collector kept.
func (c *collector) results() []result {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.gotRows)
}

// close stops the server and waits for it.
func (c *collector) close() {
	_ = c.srv.Close()
	<-c.done
}
