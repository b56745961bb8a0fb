// Command windowcount counts page views per page in one-minute event-time
// windows with a runnel reduce vertex, prints each window's counts, and
// ends by itself when its bounded source is exhausted.
//
//	views (source, 2 replicas) ──> per-minute (reduce, keyed by page) ──> report (sink)
//	                                          └─ late ──> late (sink)
//
// The views arrive out of order by up to 20 seconds; the source watermark
// trails them by that much (MaxDelay), so none is late, and a window's
// counts are emitted once the watermark passes its end (plus 10 seconds
// of allowed lateness), or, for the last windows, when the input ends.
package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// start is the event time of the first view.
var start = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

var pages = []string{"home", "docs", "blog", "about"}

// views returns replica r's page views: one every 2 seconds for 5
// minutes, shuffled by up to 18 seconds either way (out of order), keyed
// by page.
func views(r int) []vertex.Message[string] {
	var out []vertex.Message[string]
	for i := range 150 {
		page := pages[(i*(r+1)+i/7)%len(pages)]
		et := start.Add(time.Duration(i)*2*time.Second + time.Duration(r)*time.Second - time.Duration((i*7)%10)*2*time.Second)
		out = append(out, vertex.Message[string]{
			ID: fmt.Sprintf("r%d-%d", r, i), EventTime: et, Keys: []string{page}, Value: page,
		})
	}
	return out
}

// source gives each replica its own views (vertex.ReplicaFrom tells which).
type source struct {
	mu   sync.Mutex
	next [2]int
}

func (s *source) Read(ctx context.Context, max int) ([]vertex.Message[string], error) {
	r, _ := vertex.ReplicaFrom(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	all := views(r.Index)
	at := s.next[r.Index]
	if at >= len(all) {
		return nil, io.EOF
	}
	end := min(at+max, len(all))
	s.next[r.Index] = end
	return all[at:end], nil
}

// report collects the window counts; the sink's workers call it
// concurrently.
type report struct {
	mu   sync.Mutex
	rows []vertex.Windowed[int64]
}

func (rp *report) write(_ context.Context, msgs []vertex.Message[vertex.Windowed[int64]]) error {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	for _, m := range msgs {
		rp.rows = append(rp.rows, m.Value)
	}
	return nil
}

func run(ctx context.Context, out io.Writer) error {
	p := pipeline.New("windowcount", pipeline.Watermarks(pipeline.WatermarkConfig{MaxDelay: 20 * time.Second}))
	in := pipeline.Source(p, "views", &source{}, vertex.Replicas(2), vertex.BatchSize(25))
	perMinute := vertex.Fixed(time.Minute).WithAllowedLateness(10 * time.Second)
	counts, late := pipeline.Reduce(p, "per-minute", in, perMinute, vertex.Counting[string](),
		vertex.Replicas(2), vertex.Partitions(4))
	rp := &report{}
	pipeline.Sink(p, "report", counts, vertex.Func(rp.write))
	lateViews := vertex.Blackhole[string]()
	pipeline.Sink(p, "late", late, lateViews)
	if err := p.Run(ctx); err != nil {
		return err
	}
	slices.SortFunc(rp.rows, func(a, b vertex.Windowed[int64]) int {
		return cmp.Or(a.Window.Start.Compare(b.Window.Start), cmp.Compare(a.Keys[0], b.Keys[0]))
	})
	var total int64
	for i, r := range rp.rows {
		if i == 0 || !r.Window.Start.Equal(rp.rows[i-1].Window.Start) {
			if i > 0 {
				fmt.Fprintln(out)
			}
			fmt.Fprintf(out, "%s-%s", r.Window.Start.Format("15:04"), r.Window.End.Format("15:04"))
		}
		fmt.Fprintf(out, "  %s %d", r.Keys[0], r.Value)
		total += r.Value
	}
	fmt.Fprintf(out, "\nviews counted: %d, late: %d\n", total, lateViews.Count())
	return nil
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
