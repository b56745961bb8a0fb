package e2e

import (
	"bytes"
	"context"
	"flag"
	"image/png"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/pipeline/monitor"
	"github.com/runnel-dev/runnel/vertex"
)

// screenshot is where TestMonitorPageInChromium also saves its screenshot
// (the README's: go test ./e2e -run TestMonitorPageInChromium -screenshot ../docs/dag.png).
var screenshot = flag.String("screenshot", "", "also write the monitor page's screenshot to this PNG file")

// chromium finds a Chromium or Chrome binary, "" when there is none.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestMonitorPageInChromium loads the monitor page of a running pipeline
// in headless Chromium: every vertex and edge of the pipeline is drawn,
// the numbers move while it runs, the edge into a sink that cannot keep
// up (its buffer full, the edge discarding) is drawn red, and the page's
// screenshot is a PNG.
func TestMonitorPageInChromium(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no chromium binary on PATH (install Debian's chromium package: apt-get install -y chromium); the monitor page test needs one")
	}
	p := pipeline.New("clicks")
	src := pipeline.Source(p, "clicks", vertex.Generator(func(i int64) int64 { return i }).WithRate(2000).WithKeys(8))
	parsed := pipeline.FlatMap(p, "parse", src, func(_ context.Context, m vertex.Message[int64]) ([]vertex.Message[int64], error) {
		out := vertex.Derive(m, m.Value)
		out.Tags = []string{"count"}
		if m.Value%4 == 0 {
			out.Tags = append(out.Tags, "archive")
		}
		return []vertex.Message[int64]{out}, nil
	}, vertex.Replicas(2))
	counts, late := pipeline.Reduce(p, "per-second", parsed.Tagged("count"), vertex.Fixed(time.Second), vertex.Counting[int64](), vertex.Partitions(2), vertex.Replicas(2))
	pipeline.Sink(p, "report", counts, vertex.Blackhole[vertex.Windowed[int64]]())
	pipeline.Sink(p, "late", late, vertex.Blackhole[int64]())
	// The archive writes 10 messages per 20ms, 500 a second, of the 500 a
	// second it is sent plus what a batch brings at once: its buffer of
	// 100 fills, and the edge discards.
	pipeline.Sink(p, "archive", parsed.Tagged("archive").DiscardWhenFull(), vertex.Func(func(ctx context.Context, _ []vertex.Message[int64]) error {
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
		}
		return nil
	}), vertex.BufferCapacity(100), vertex.BatchSize(10), vertex.MaxInFlight(10))

	h, err := monitor.Handler(p, monitor.Refresh(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("pipeline: %v", err)
		}
	}()

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.WindowSize(1500, 720), chromedp.Flag("disable-gpu", true))...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	bctx, cancelTimeout := context.WithTimeout(browser, 60*time.Second)
	defer cancelTimeout()

	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(`#dag g.vertex`)); err != nil {
		t.Fatalf("load the page: %v", err)
	}
	type graph struct {
		Vertices []string `json:"vertices"`
		Edges    []string `json:"edges"`
	}
	drawn, err := chromedp.Run(bctx, chromedp.Evaluate[graph](`({
		vertices: [...document.querySelectorAll("#dag g.vertex")].map(g => g.dataset.vertex),
		edges: [...document.querySelectorAll("#dag path.edge")].map(e => e.dataset.from + ">" + e.dataset.to),
	})`))
	if err != nil {
		t.Fatal(err)
	}
	st := p.Status()
	var wantV, wantE []string
	for _, v := range st.Vertices {
		wantV = append(wantV, v.Name)
	}
	for _, e := range st.Edges {
		wantE = append(wantE, e.From+">"+e.To)
	}
	slices.Sort(drawn.Vertices)
	slices.Sort(drawn.Edges)
	slices.Sort(wantV)
	slices.Sort(wantE)
	if !slices.Equal(drawn.Vertices, wantV) || !slices.Equal(drawn.Edges, wantE) {
		t.Fatalf("drawn vertices %v, edges %v; the pipeline has %v and %v", drawn.Vertices, drawn.Edges, wantV, wantE)
	}

	// The numbers move: the sink's read count as drawn grows from one
	// refresh to a later one, and so does the text of its rate.
	readOf := func(vertex string) (int64, string) {
		got, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`(() => {
			const g = document.querySelector('#dag g.vertex[data-vertex="`+vertex+`"]');
			return [g.dataset.read, g.querySelector(".rate").textContent, document.getElementById("updated").dataset.updates];
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.ParseInt(got[0], 10, 64)
		return n, got[1]
	}
	first, _ := readOf("parse")
	waitUntil(t, "the page shows parse reading more", func() bool { n, _ := readOf("parse"); return n > first })
	waitUntil(t, "the page shows a rate for parse", func() bool { _, rate := readOf("parse"); return rate != "0 msg/s" })

	// The archive's buffer fills: its edge is drawn full, in red.
	waitUntil(t, "the edge into the archive is drawn full", func() bool {
		full, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => {
			const e = document.querySelector('#dag path.edge[data-to="archive"]');
			return e.classList.contains("full") && getComputedStyle(e).stroke === "rgb(208, 48, 42)";
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		return full
	})
	others, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`[...document.querySelectorAll('#dag path.edge.full')].every(e => e.dataset.to === "archive")`))
	if err != nil || !others {
		t.Errorf("an edge other than the archive's is drawn full (%v)", err)
	}

	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is no PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 400 {
		t.Fatalf("screenshot of %v", b)
	}
	out := filepath.Join(t.TempDir(), "dag.png")
	if *screenshot != "" {
		out = *screenshot
	}
	if err := os.WriteFile(out, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %v in %s", img.Bounds().Size(), out)
	cancelTimeout()
	cancelBrowser() // closes the browser before the pipeline drains
	if st := p.Status(); st.Error != "" {
		t.Fatalf("the run failed: %s", st.Error)
	}
}

// waitUntil polls cond every 50ms, bounded by 30 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}
